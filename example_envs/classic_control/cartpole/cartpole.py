"""CartPole (gymnasium CartPole-v1 dynamics), vectorised over env replicas.

The CUDA kernel ``cartpole_step.cu`` mirrors :func:`cartpole_transition`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs.classic_control.base import ClassicControlEnv, Transition
from example_envs.classic_control.cartpole import constants as C


def cartpole_transition(state: np.ndarray, action: np.ndarray, p: Mapping[str, Any]) -> Transition:
    """gymnasium ``CartPoleEnv.step`` for (E, 4) float32 states and (E,) int actions.

    Computed in float64 from the float32 state, in gymnasium's operation order; the new state is
    stored as float32 and the observation, termination and reward come from the float64 values,
    as in gymnasium. Any action other than 1 pushes left (gymnasium: ``action == 1``).
    """
    x, x_dot, theta, theta_dot = state.astype(np.float64).T
    total_mass = p["masspole"] + p["masscart"]
    polemass_length = p["masspole"] * p["length"]
    force = np.where(action == 1, p["force_mag"], -p["force_mag"])
    costheta = np.cos(theta)
    sintheta = np.sin(theta)
    temp = (force + polemass_length * np.square(theta_dot) * sintheta) / total_mass
    thetaacc = (p["gravity"] * sintheta - costheta * temp) / (
        p["length"] * (4.0 / 3.0 - p["masspole"] * np.square(costheta) / total_mass)
    )
    xacc = temp - polemass_length * thetaacc * costheta / total_mass
    tau = p["tau"]
    if p["kinematics_integrator"] == "euler":
        x = x + tau * x_dot
        x_dot = x_dot + tau * xacc
        theta = theta + tau * theta_dot
        theta_dot = theta_dot + tau * thetaacc
    else:  # semi-implicit euler
        x_dot = x_dot + tau * xacc
        x = x + tau * x_dot
        theta_dot = theta_dot + tau * thetaacc
        theta = theta + tau * theta_dot
    new_state = np.stack([x, x_dot, theta, theta_dot], axis=1).astype(np.float32)
    x_thr, th_thr = p["x_threshold"], p["theta_threshold_radians"]
    terminated = (x < -x_thr) | (x > x_thr) | (theta < -th_thr) | (theta > th_thr)
    if p["sutton_barto_reward"]:
        reward = np.where(terminated, -1.0, 0.0)
    else:
        reward = np.ones_like(x)
    return Transition(new_state, new_state.copy(), reward.astype(np.float32), terminated)


class ClassicControlCartPoleEnv(ClassicControlEnv):
    """CartPole-v1: keep a pole upright by pushing the cart left (0) or right (1).

    Reward 1 every step including the terminating one (``sutton_barto_reward=True``: 0, and -1
    on termination). Terminates when ``|x| > x_threshold`` or ``|theta| > theta_threshold_radians``.
    Physics overrides: see ``constants.PHYSICS``.
    """

    name = "ClassicControlCartPoleEnv"
    cuda_source = Path(__file__).with_name("cartpole_step.cu")
    numba_source = "example_envs.classic_control.cartpole.cartpole_step_numba"
    STATE_DIM = C.STATE_DIM
    OBS_DIM = C.OBS_DIM
    PHYSICS = C.PHYSICS

    def make_observation_space(self) -> spaces.Box:
        p = self.params
        high = np.array(
            [p["x_threshold"] * 2, np.inf, p["theta_threshold_radians"] * 2, np.inf], dtype=np.float32
        )
        return spaces.Box(-high, high, dtype=np.float32)

    def make_action_space(self) -> spaces.Discrete:
        return spaces.Discrete(C.NUM_ACTIONS)

    def start_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (C.RESET_LOW,) * C.STATE_DIM, (C.RESET_HIGH,) * C.STATE_DIM

    def observe(self, state: np.ndarray) -> np.ndarray:
        return np.asarray(state, dtype=np.float32).copy()

    def transition(self, state: np.ndarray, action: np.ndarray) -> Transition:
        return cartpole_transition(state, action, self.params)

    def extra_cuda_constants(self) -> dict[str, float]:
        p = self.params
        return {
            "kTotalMass": p["masspole"] + p["masscart"],
            "kPoleMassLength": p["masspole"] * p["length"],
        }


class CUDAClassicControlCartPoleEnv(ClassicControlCartPoleEnv):
    """2.7.1's name of the GPU CartPole (Numba only there). Every env here is dual mode, so this is
    :class:`ClassicControlCartPoleEnv` itself: same ``name``, CUDA kernel and constructor."""
