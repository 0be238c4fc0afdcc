"""MountainCar constants: gymnasium MountainCar-v0's values, the single source for Python and CUDA.

``PHYSICS`` lists the constructor overrides; ``ClassicControlMountainCarEnv.cuda_constants()``
renders them into the kernel prelude.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from example_envs.classic_control.base import PhysicsParam

STATE_DIM: Final = 2  # position, velocity
OBS_DIM: Final = 2  # the state itself
NUM_ACTIONS: Final = 3  # 0: accelerate left, 1: none, 2: right; force = (action - 1) * FORCE
#: ``_done_`` value when the goal is reached (also on the time-limit step); 1 = time limit only.
GOAL_DONE_VALUE: Final = 2

MIN_POSITION: Final = -1.2
MAX_POSITION: Final = 0.6
MAX_SPEED: Final = 0.07
GOAL_POSITION: Final = 0.5
GOAL_VELOCITY: Final = 0.0
FORCE: Final = 0.001
GRAVITY: Final = 0.0025
REWARD_PER_STEP: Final = -1.0


PHYSICS: Final = MappingProxyType(
    {
        "min_position": PhysicsParam(MIN_POSITION, "finite", "kMinPosition"),
        "max_position": PhysicsParam(MAX_POSITION, "finite", "kMaxPosition"),
        "max_speed": PhysicsParam(MAX_SPEED, "positive", "kMaxSpeed"),
        "goal_position": PhysicsParam(GOAL_POSITION, "finite", "kGoalPosition"),
        "goal_velocity": PhysicsParam(GOAL_VELOCITY, "finite", "kGoalVelocity"),
        "force": PhysicsParam(FORCE, "nonnegative", "kForce"),
        "gravity": PhysicsParam(GRAVITY, "nonnegative", "kGravity"),
    }
)
