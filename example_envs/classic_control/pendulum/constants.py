"""Pendulum constants: gymnasium Pendulum-v1's values, the single source for Python and CUDA.

``PHYSICS`` lists the constructor overrides; ``ClassicControlPendulumEnv.cuda_constants()``
renders them (and the derived step coefficients) into the kernel prelude. gymnasium's default
``g`` is 10.0 (the WarpDrive reference built its pendulum with ``g=9.81``: pass ``g=9.81``).
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Final

from example_envs.classic_control.base import PhysicsParam

STATE_DIM: Final = 2  # theta, theta_dot
OBS_DIM: Final = 3  # cos theta, sin theta, theta_dot
ACTION_DIM: Final = 1  # torque, clipped to [-max_torque, max_torque]

MAX_SPEED: Final = 8.0
MAX_TORQUE: Final = 2.0
DT: Final = 0.05
G: Final = 10.0
M: Final = 1.0
L: Final = 1.0
#: cost = angle_normalize(th)**2 + THETA_DOT_COST * thdot**2 + TORQUE_COST * u**2
THETA_DOT_COST: Final = 0.1
TORQUE_COST: Final = 0.001

#: gymnasium's reset: theta uniform in [-pi, pi), theta_dot uniform in [-1, 1).
RESET_HIGH: Final = (math.pi, 1.0)

PHYSICS: Final = MappingProxyType(
    {
        "max_speed": PhysicsParam(MAX_SPEED, "positive", "kMaxSpeed"),
        "max_torque": PhysicsParam(MAX_TORQUE, "positive", "kMaxTorque"),
        "dt": PhysicsParam(DT, "positive", "kDt"),
        "g": PhysicsParam(G, "nonnegative", None),  # via kGravityCoef
        "m": PhysicsParam(M, "positive", None),  # via kTorqueCoef
        "l": PhysicsParam(L, "positive", None),  # via both coefficients
    }
)
