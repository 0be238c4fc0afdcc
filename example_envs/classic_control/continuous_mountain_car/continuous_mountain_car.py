"""ContinuousMountainCar (gymnasium MountainCarContinuous-v0 dynamics), vectorised over envs.

gymnasium stores this env's state as float32, and NumPy 2 evaluates its step mostly in float32
(a Python float meeting a float32 scalar is cast to float32). :func:`continuous_mountain_car_transition`
reproduces that arithmetic operation by operation; the CUDA kernel
``continuous_mountain_car_step.cu`` mirrors it with round-to-nearest float intrinsics (no FMA).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs.classic_control.base import Transition
from example_envs.classic_control.mountain_car_common import MountainCarBase
from example_envs.classic_control.continuous_mountain_car import constants as C
from warp_drive.errors import ConfigError

f32 = np.float32


def continuous_mountain_car_transition(
    state: np.ndarray, action: np.ndarray, p: Mapping[str, Any]
) -> Transition:
    """gymnasium ``Continuous_MountainCarEnv.step`` for (E, 2) float32 states, (E,) float32 actions.

    gymnasium's arithmetic, from a float32 state (its own storage after any step):

    - ``force = min(max(a, min_action), max_action)``: compared in float32; a clipped force is the
      Python float bound (float64), an unclipped one stays float32.
    - ``dv = force * power - gravity * cos(3 * position)``: ``3 * position`` in float32, the cosine
      and ``gravity * cos`` in float64; an unclipped force gives ``f32(f32(force * f32(power)) -
      f32(gravity * cos))``, a clipped one ``f32(bound * power - gravity * cos)`` in float64.
    - ``velocity = f32(velocity + dv)``; bounds checks and assignments in float32.
    - ``reward = (goal_reward if terminated else 0) - a**2 * action_cost`` in float64 (unclipped a).
    """
    position = state[:, 0].astype(f32)
    velocity = state[:, 1].astype(f32)
    a = np.asarray(action, dtype=f32)
    clipped_low = f32(p["min_action"]) > a
    force = np.where(clipped_low, f32(p["min_action"]), a)
    clipped_high = f32(p["max_action"]) < force
    clipped = clipped_low | clipped_high
    bound = np.where(clipped_low, p["min_action"], p["max_action"])  # float64 Python bounds
    slope = p["gravity"] * np.cos((f32(3) * position).astype(np.float64))  # float64
    dv_f32 = (a * f32(p["power"])) - slope.astype(f32)  # float32 ops
    dv_f64 = bound * p["power"] - slope  # float64 ops, used when the force was clipped
    dv = np.where(clipped, dv_f64.astype(f32), dv_f32)
    velocity = velocity + dv
    max_speed = f32(p["max_speed"])
    velocity = np.where(velocity > max_speed, max_speed, velocity)
    velocity = np.where(velocity < -max_speed, -max_speed, velocity)
    position = position + velocity
    position = np.where(position > f32(p["max_position"]), f32(p["max_position"]), position)
    position = np.where(position < f32(p["min_position"]), f32(p["min_position"]), position)
    velocity = np.where((position == f32(p["min_position"])) & (velocity < 0), f32(0), velocity)
    terminated = (position >= f32(p["goal_position"])) & (velocity >= f32(p["goal_velocity"]))
    reward = np.where(terminated, p["goal_reward"], 0.0) - np.square(a.astype(np.float64)) * p["action_cost"]
    new_state = np.stack([position, velocity], axis=1).astype(f32)
    return Transition(new_state, new_state.copy(), reward.astype(f32), terminated)


class ClassicControlContinuousMountainCarEnv(MountainCarBase):
    """MountainCarContinuous-v0: drive the car up the right hill with a force in [-1, 1].

    Reward ``goal_reward`` (100) on reaching the goal minus ``action_cost * a**2`` (0.1, unclipped
    action) every step. ``_done_`` = 2 when the goal is reached (also on the time-limit step), 1 on
    the time limit otherwise. Action space: gymnasium ``Box(min_action, max_action, (1,))``.
    """

    name = "ClassicControlContinuousMountainCarEnv"
    cuda_source = Path(__file__).with_name("continuous_mountain_car_step.cu")
    numba_source = "example_envs.classic_control.continuous_mountain_car.continuous_mountain_car_step_numba"
    STATE_DIM = C.STATE_DIM
    OBS_DIM = C.OBS_DIM
    PHYSICS = C.PHYSICS
    TERMINAL_DONE_VALUE = C.GOAL_DONE_VALUE

    def check_physics(self, params: Mapping[str, Any]) -> None:
        for lo, hi in (("min_action", "max_action"), ("min_position", "max_position")):
            if not params[lo] < params[hi]:
                raise ConfigError(f"{self.name}: {lo}={params[lo]} must be below {hi}={params[hi]}")

    def make_action_space(self) -> spaces.Box:
        p = self.params
        return spaces.Box(low=p["min_action"], high=p["max_action"], shape=(C.ACTION_DIM,), dtype=np.float32)

    def transition(self, state: np.ndarray, action: np.ndarray) -> Transition:
        return continuous_mountain_car_transition(state, action, self.params)


class CUDAClassicControlContinuousMountainCarEnv(ClassicControlContinuousMountainCarEnv):
    """2.7.1's name of the GPU ContinuousMountainCar (Numba only there). Every env here is dual mode, so this is
    :class:`ClassicControlContinuousMountainCarEnv` itself: same ``name``, CUDA kernel and constructor."""
