"""MountainCar (gymnasium MountainCar-v0 dynamics), vectorised over env replicas.

The CUDA kernel ``mountain_car_step.cu`` mirrors :func:`mountain_car_transition`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs.classic_control.base import Transition
from example_envs.classic_control.mountain_car_common import MountainCarBase
from example_envs.classic_control.mountain_car import constants as C
from warp_drive.errors import ConfigError


def mountain_car_transition(state: np.ndarray, action: np.ndarray, p: Mapping[str, Any]) -> Transition:
    """gymnasium ``MountainCarEnv.step`` for (E, 2) float32 states and (E,) int actions.

    Float64 from the float32 state (gymnasium keeps a float64 state), stored as float32; the goal
    test uses the float64 values, as in gymnasium. The force is ``(action - 1) * force`` for any
    integer action, as in gymnasium.
    """
    position = state[:, 0].astype(np.float64)
    velocity = state[:, 1].astype(np.float64)
    velocity = velocity + (
        (action.astype(np.float64) - 1) * p["force"] + np.cos(3 * position) * (-p["gravity"])
    )
    velocity = np.clip(velocity, -p["max_speed"], p["max_speed"])
    position = position + velocity
    position = np.clip(position, p["min_position"], p["max_position"])
    velocity = np.where((position == p["min_position"]) & (velocity < 0), 0.0, velocity)
    terminated = (position >= p["goal_position"]) & (velocity >= p["goal_velocity"])
    new_state = np.stack([position, velocity], axis=1).astype(np.float32)
    reward = np.full(position.shape, C.REWARD_PER_STEP, dtype=np.float32)
    return Transition(new_state, new_state.copy(), reward, terminated)


class ClassicControlMountainCarEnv(MountainCarBase):
    """MountainCar-v0: drive an underpowered car up the right hill (actions: left, none, right).

    Reward -1 per step. ``_done_`` = 2 when the goal is reached (position >= goal_position and
    velocity >= goal_velocity), also on the time-limit step; 1 on the time limit otherwise.
    """

    name = "ClassicControlMountainCarEnv"
    cuda_source = Path(__file__).with_name("mountain_car_step.cu")
    numba_source = "example_envs.classic_control.mountain_car.mountain_car_step_numba"
    STATE_DIM = C.STATE_DIM
    OBS_DIM = C.OBS_DIM
    PHYSICS = C.PHYSICS
    TERMINAL_DONE_VALUE = C.GOAL_DONE_VALUE

    def check_physics(self, params: Mapping[str, Any]) -> None:
        if not params["min_position"] < params["max_position"]:
            raise ConfigError(
                f"{self.name}: min_position={params['min_position']} must be below "
                f"max_position={params['max_position']}"
            )

    def make_action_space(self) -> spaces.Discrete:
        return spaces.Discrete(C.NUM_ACTIONS)

    def transition(self, state: np.ndarray, action: np.ndarray) -> Transition:
        return mountain_car_transition(state, action, self.params)


class CUDAClassicControlMountainCarEnv(ClassicControlMountainCarEnv):
    """2.7.1's name of the GPU MountainCar (Numba only there). Every env here is dual mode, so this is
    :class:`ClassicControlMountainCarEnv` itself: same ``name``, CUDA kernel and constructor."""
