"""Acrobot (gymnasium Acrobot-v1 dynamics: "book" equations, RK4 over dt), vectorised over envs.

The CUDA kernel ``acrobot_step.cu`` mirrors :func:`acrobot_dsdt`, :func:`acrobot_rk4`,
:func:`wrap_angle` and :func:`acrobot_transition`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs.classic_control.acrobot import constants as C
from example_envs.classic_control.base import ClassicControlEnv, Transition, scalar_pow2


def acrobot_dsdt(s: np.ndarray, torque: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    """gymnasium ``AcrobotEnv._dsdt`` ("book"): (E, 4) float64 state -> (E, 4) derivatives.

    Squares of state terms use C pow like gymnasium's scalar ``**`` (:func:`scalar_pow2`).
    """
    m1, m2 = p["link_mass_1"], p["link_mass_2"]
    l1, lc1, lc2 = p["link_length_1"], p["link_com_pos_1"], p["link_com_pos_2"]
    i1 = i2 = p["link_moi"]
    g = p["gravity"]
    theta1, theta2, dtheta1, dtheta2 = s.T
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * np.cos(theta2)) + i1 + i2
    d2 = m2 * (lc2**2 + l1 * lc2 * np.cos(theta2)) + i2
    phi2 = m2 * lc2 * g * np.cos(theta1 + theta2 - np.pi / 2.0)
    phi1 = (
        -m2 * l1 * lc2 * scalar_pow2(dtheta2) * np.sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * np.sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * np.cos(theta1 - np.pi / 2)
        + phi2
    )
    ddtheta2 = (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * scalar_pow2(dtheta1) * np.sin(theta2) - phi2) / (
        m2 * lc2**2 + i2 - scalar_pow2(d2) / d1
    )
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return np.stack([dtheta1, dtheta2, ddtheta1, ddtheta2], axis=1)


def acrobot_rk4(y0: np.ndarray, torque: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    """gymnasium ``rk4`` over one step [0, dt] (the torque is constant over the step)."""
    dt = p["dt"]
    dt2 = dt / 2.0
    k1 = acrobot_dsdt(y0, torque, p)
    k2 = acrobot_dsdt(y0 + dt2 * k1, torque, p)
    k3 = acrobot_dsdt(y0 + dt2 * k2, torque, p)
    k4 = acrobot_dsdt(y0 + dt * k3, torque, p)
    return y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def wrap_angle(x: np.ndarray) -> np.ndarray:
    """gymnasium ``wrap(x, -pi, pi)``: subtract / add 2 pi while out of range (bounded loops)."""
    lo, hi = -np.pi, np.pi
    diff = hi - lo
    x = x.copy()
    for _ in range(C.MAX_WRAP_ITERATIONS):
        over = x > hi
        if not over.any():
            break
        x[over] = x[over] - diff
    for _ in range(C.MAX_WRAP_ITERATIONS):
        under = x < lo
        if not under.any():
            break
        x[under] = x[under] + diff
    return x


def acrobot_observe(s: np.ndarray) -> np.ndarray:
    """gymnasium ``AcrobotEnv._get_ob`` of (E, 4) states -> (E, 6) float32."""
    s = s.astype(np.float64)
    t1, t2 = s[:, 0], s[:, 1]
    return np.stack([np.cos(t1), np.sin(t1), np.cos(t2), np.sin(t2), s[:, 2], s[:, 3]], axis=1).astype(
        np.float32
    )


def acrobot_transition(state: np.ndarray, action: np.ndarray, p: Mapping[str, Any]) -> Transition:
    """gymnasium ``AcrobotEnv.step`` for (E, 4) float32 states and (E,) actions in {0, 1, 2}.

    Float64 from the float32 state (gymnasium's own precision), stored as float32; observation,
    termination and reward come from the float64 values, as in gymnasium.
    """
    torque = np.asarray(C.AVAIL_TORQUE)[np.clip(action, 0, C.NUM_ACTIONS - 1)]
    ns = acrobot_rk4(state.astype(np.float64), torque, p)
    ns[:, 0] = wrap_angle(ns[:, 0])
    ns[:, 1] = wrap_angle(ns[:, 1])
    ns[:, 2] = np.clip(ns[:, 2], -p["max_vel_1"], p["max_vel_1"])
    ns[:, 3] = np.clip(ns[:, 3], -p["max_vel_2"], p["max_vel_2"])
    terminated = -np.cos(ns[:, 0]) - np.cos(ns[:, 1] + ns[:, 0]) > 1.0
    reward = np.where(terminated, 0.0, -1.0).astype(np.float32)
    return Transition(ns.astype(np.float32), acrobot_observe(ns), reward, terminated)


class ClassicControlAcrobotEnv(ClassicControlEnv):
    """Acrobot-v1: swing the tip of a two-link chain above the bar by torquing the middle joint.

    Actions 0, 1, 2 apply torque -1, 0, +1. Reward -1 per step, 0 on the terminating step.
    Terminates when ``-cos(theta1) - cos(theta1 + theta2) > 1``.
    """

    name = "ClassicControlAcrobotEnv"
    cuda_source = Path(__file__).with_name("acrobot_step.cu")
    numba_source = "example_envs.classic_control.acrobot.acrobot_step_numba"
    STATE_DIM = C.STATE_DIM
    OBS_DIM = C.OBS_DIM
    PHYSICS = C.PHYSICS

    def make_observation_space(self) -> spaces.Box:
        p = self.params
        high = np.array([1.0, 1.0, 1.0, 1.0, p["max_vel_1"], p["max_vel_2"]], dtype=np.float32)
        return spaces.Box(-high, high, dtype=np.float32)

    def make_action_space(self) -> spaces.Discrete:
        return spaces.Discrete(C.NUM_ACTIONS)

    def start_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (C.RESET_LOW,) * C.STATE_DIM, (C.RESET_HIGH,) * C.STATE_DIM

    def observe(self, state: np.ndarray) -> np.ndarray:
        return acrobot_observe(state)

    def transition(self, state: np.ndarray, action: np.ndarray) -> Transition:
        return acrobot_transition(state, action, self.params)

    def extra_cuda_constants(self) -> dict[str, int | float]:
        p = self.params
        torques = {f"kAvailTorque{i}": t for i, t in enumerate(C.AVAIL_TORQUE)}
        squares = {  # Python's float ** 2, exactly as gymnasium evaluates the constant squares
            "kLinkLength1Sq": p["link_length_1"] ** 2,
            "kLinkComPos1Sq": p["link_com_pos_1"] ** 2,
            "kLinkComPos2Sq": p["link_com_pos_2"] ** 2,
        }
        return {
            "kNumActions": C.NUM_ACTIONS,
            "kMaxWrapIterations": C.MAX_WRAP_ITERATIONS,
            **torques,
            **squares,
        }


class CUDAClassicControlAcrobotEnv(ClassicControlAcrobotEnv):
    """2.7.1's name of the GPU Acrobot (Numba only there). Every env here is dual mode, so this is
    :class:`ClassicControlAcrobotEnv` itself: same ``name``, CUDA kernel and constructor."""
