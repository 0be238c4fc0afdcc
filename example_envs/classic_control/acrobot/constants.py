"""Acrobot constants: gymnasium Acrobot-v1's values ("book" dynamics, no torque noise).

The single source for Python and CUDA: ``PHYSICS`` lists the constructor overrides, which
``ClassicControlAcrobotEnv.cuda_constants()`` renders into the kernel prelude.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Final

from example_envs.classic_control.base import PhysicsParam

STATE_DIM: Final = 4  # theta1, theta2, dtheta1, dtheta2
OBS_DIM: Final = 6  # cos t1, sin t1, cos t2, sin t2, dtheta1, dtheta2
NUM_ACTIONS: Final = 3
#: Torque of each action (gymnasium's AVAIL_TORQUE); out-of-range actions are clamped to 0..2.
AVAIL_TORQUE: Final = (-1.0, 0.0, 1.0)
#: Bound on the iterations of gymnasium's ``wrap`` loops (``|angle| <= 129 pi`` always suffices;
#: gymnasium would loop forever on inf, which then stays inf here).
MAX_WRAP_ITERATIONS: Final = 64

DT: Final = 0.2
LINK_LENGTH_1: Final = 1.0
LINK_MASS_1: Final = 1.0
LINK_MASS_2: Final = 1.0
LINK_COM_POS_1: Final = 0.5
LINK_COM_POS_2: Final = 0.5
LINK_MOI: Final = 1.0  # moment of inertia of both links
MAX_VEL_1: Final = 4 * math.pi
MAX_VEL_2: Final = 9 * math.pi
GRAVITY: Final = 9.8  # hard-coded as g in gymnasium's _dsdt

#: gymnasium's reset: every state component uniform in [RESET_LOW, RESET_HIGH), then float32.
RESET_LOW: Final = -0.1
RESET_HIGH: Final = 0.1

PHYSICS: Final = MappingProxyType(
    {
        "dt": PhysicsParam(DT, "positive", "kDt"),
        "link_length_1": PhysicsParam(LINK_LENGTH_1, "positive", "kLinkLength1"),
        "link_mass_1": PhysicsParam(LINK_MASS_1, "positive", "kLinkMass1"),
        "link_mass_2": PhysicsParam(LINK_MASS_2, "positive", "kLinkMass2"),
        "link_com_pos_1": PhysicsParam(LINK_COM_POS_1, "nonnegative", "kLinkComPos1"),
        "link_com_pos_2": PhysicsParam(LINK_COM_POS_2, "nonnegative", "kLinkComPos2"),
        "link_moi": PhysicsParam(LINK_MOI, "positive", "kLinkMoi"),
        "max_vel_1": PhysicsParam(MAX_VEL_1, "positive", "kMaxVel1"),
        "max_vel_2": PhysicsParam(MAX_VEL_2, "positive", "kMaxVel2"),
        "gravity": PhysicsParam(GRAVITY, "nonnegative", "kGravity"),
    }
)
