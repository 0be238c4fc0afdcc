"""CartPole constants: gymnasium CartPole-v1's values, the single source for Python and CUDA.

``PHYSICS`` lists the constructor overrides; ``ClassicControlCartPoleEnv.cuda_constants()`` renders
them (and the derived ``kTotalMass`` / ``kPoleMassLength``) into the kernel prelude.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Final

from example_envs.classic_control.base import PhysicsParam

STATE_DIM: Final = 4  # x, x_dot, theta, theta_dot
OBS_DIM: Final = 4  # the state itself
NUM_ACTIONS: Final = 2  # 0: push left, 1: push right

GRAVITY: Final = 9.8
MASS_CART: Final = 1.0
MASS_POLE: Final = 0.1
LENGTH: Final = 0.5  # half the pole's length
FORCE_MAG: Final = 10.0
TAU: Final = 0.02  # seconds per step
THETA_THRESHOLD_RADIANS: Final = 12 * 2 * math.pi / 360  # as gymnasium computes it
X_THRESHOLD: Final = 2.4
KINEMATICS_INTEGRATORS: Final = ("euler", "semi-implicit euler")

#: gymnasium's reset: every state component uniform in [RESET_LOW, RESET_HIGH).
RESET_LOW: Final = -0.05
RESET_HIGH: Final = 0.05

PHYSICS: Final = MappingProxyType(
    {
        "gravity": PhysicsParam(GRAVITY, "nonnegative", "kGravity"),
        "masscart": PhysicsParam(MASS_CART, "positive", None),  # via kTotalMass
        "masspole": PhysicsParam(MASS_POLE, "positive", "kMassPole"),
        "length": PhysicsParam(LENGTH, "positive", "kLength"),
        "force_mag": PhysicsParam(FORCE_MAG, "nonnegative", "kForceMag"),
        "tau": PhysicsParam(TAU, "positive", "kTau"),
        "theta_threshold_radians": PhysicsParam(THETA_THRESHOLD_RADIANS, "positive", "kThetaThreshold"),
        "x_threshold": PhysicsParam(X_THRESHOLD, "positive", "kXThreshold"),
        "kinematics_integrator": PhysicsParam("euler", KINEMATICS_INTEGRATORS, "kKinematicsIntegrator"),
        "sutton_barto_reward": PhysicsParam(False, "bool", "kSuttonBartoReward"),
    }
)
