"""Pendulum (gymnasium Pendulum-v1 dynamics), vectorised over env replicas.

The CUDA kernel ``pendulum_step.cu`` mirrors :func:`angle_normalize` and
:func:`pendulum_transition`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs.classic_control.base import ClassicControlEnv, Transition, scalar_pow2
from example_envs.classic_control.pendulum import constants as C

f32 = np.float32


def angle_normalize(x: np.ndarray) -> np.ndarray:
    """gymnasium ``angle_normalize``: ``((x + pi) % (2 pi)) - pi`` (floor-mod, float64)."""
    return ((x + np.pi) % (2 * np.pi)) - np.pi


def pendulum_coefficients(p: Mapping[str, Any]) -> tuple[float, float]:
    """gymnasium's step coefficients ``3 g / (2 l)`` and ``3 / (m l^2)`` (Python floats)."""
    return 3 * p["g"] / (2 * p["l"]), 3.0 / (p["m"] * p["l"] ** 2)


def pendulum_transition(state: np.ndarray, action: np.ndarray, p: Mapping[str, Any]) -> Transition:
    """gymnasium ``PendulumEnv.step`` for (E, 2) float32 states and (E,) float32 torques.

    The state is float64 (gymnasium's precision) from the float32 storage. The torque ``u`` stays
    float32 as in gymnasium, so ``u**2``, ``0.001 * u**2`` and ``3 / (m l^2) * u`` are float32
    operations; everything else is float64. Float64 squares use C pow like gymnasium's scalar
    ``**`` (:func:`scalar_pow2`). The float32 ``u**2`` is ``u * u`` (correctly rounded, as on the
    GPU): gymnasium's libm ``powf`` misrounds about 0.07% of squares, which moves about 1e-4 of
    the float32 rewards by one ulp. Reward = -cost, cast to float32.
    """
    th = state[:, 0].astype(np.float64)
    thdot = state[:, 1].astype(np.float64)
    u = np.clip(np.asarray(action, dtype=f32), f32(-p["max_torque"]), f32(p["max_torque"]))
    gravity_coef, torque_coef = pendulum_coefficients(p)
    costs = (
        scalar_pow2(angle_normalize(th))
        + C.THETA_DOT_COST * scalar_pow2(thdot)
        + (f32(C.TORQUE_COST) * (u * u)).astype(np.float64)
    )
    newthdot = thdot + (gravity_coef * np.sin(th) + (f32(torque_coef) * u).astype(np.float64)) * p["dt"]
    newthdot = np.clip(newthdot, -p["max_speed"], p["max_speed"])
    newth = th + newthdot * p["dt"]
    new_state = np.stack([newth, newthdot], axis=1)
    return Transition(
        new_state.astype(f32), pendulum_observe(new_state), (-costs).astype(f32), np.zeros(th.shape, bool)
    )


def pendulum_observe(state: np.ndarray) -> np.ndarray:
    """gymnasium ``PendulumEnv._get_obs``: (cos theta, sin theta, theta_dot) as float32."""
    th = state[:, 0].astype(np.float64)
    return np.stack([np.cos(th), np.sin(th), state[:, 1].astype(np.float64)], axis=1).astype(f32)


class ClassicControlPendulumEnv(ClassicControlEnv):
    """Pendulum-v1: swing a pendulum up and hold it with a torque in [-2, 2].

    Reward = -(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2). Never terminates;
    ``_done_`` = 1 at the time limit only. Action space: gymnasium ``Box(-2, 2, (1,))``.
    """

    name = "ClassicControlPendulumEnv"
    cuda_source = Path(__file__).with_name("pendulum_step.cu")
    numba_source = "example_envs.classic_control.pendulum.pendulum_step_numba"
    STATE_DIM = C.STATE_DIM
    OBS_DIM = C.OBS_DIM
    PHYSICS = C.PHYSICS

    def make_observation_space(self) -> spaces.Box:
        high = np.array([1.0, 1.0, self.params["max_speed"]], dtype=np.float32)
        return spaces.Box(low=-high, high=high, dtype=np.float32)

    def make_action_space(self) -> spaces.Box:
        t = self.params["max_torque"]
        return spaces.Box(low=-t, high=t, shape=(C.ACTION_DIM,), dtype=np.float32)

    def start_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return tuple(-h for h in C.RESET_HIGH), tuple(C.RESET_HIGH)

    def observe(self, state: np.ndarray) -> np.ndarray:
        return pendulum_observe(state)

    def transition(self, state: np.ndarray, action: np.ndarray) -> Transition:
        return pendulum_transition(state, action, self.params)

    def extra_cuda_constants(self) -> dict[str, float]:
        gravity_coef, torque_coef = pendulum_coefficients(self.params)
        return {
            "kGravityCoef": gravity_coef,
            "kTorqueCoef": torque_coef,
            "kThetaDotCost": C.THETA_DOT_COST,
            "kTorqueCost": C.TORQUE_COST,
        }


class CUDAClassicControlPendulumEnv(ClassicControlPendulumEnv):
    """2.7.1's name of the GPU Pendulum (Numba only there). Every env here is dual mode, so this is
    :class:`ClassicControlPendulumEnv` itself: same ``name``, CUDA kernel and constructor."""
