"""ContinuousMountainCar constants: gymnasium MountainCarContinuous-v0's values.

The single source for Python and CUDA: ``PHYSICS`` lists the constructor overrides, which
``ClassicControlContinuousMountainCarEnv.cuda_constants()`` renders into the kernel prelude.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from example_envs.classic_control.base import PhysicsParam

STATE_DIM: Final = 2  # position, velocity
OBS_DIM: Final = 2  # the state itself
ACTION_DIM: Final = 1  # force, clipped to [min_action, max_action]
#: ``_done_`` value when the goal is reached (also on the time-limit step); 1 = time limit only.
GOAL_DONE_VALUE: Final = 2

MIN_ACTION: Final = -1.0
MAX_ACTION: Final = 1.0
MIN_POSITION: Final = -1.2
MAX_POSITION: Final = 0.6
MAX_SPEED: Final = 0.07
GOAL_POSITION: Final = 0.45
GOAL_VELOCITY: Final = 0.0
POWER: Final = 0.0015
GRAVITY: Final = 0.0025  # the literal 0.0025 of gymnasium's velocity update
GOAL_REWARD: Final = 100.0
ACTION_COST: Final = 0.1  # reward -= ACTION_COST * action**2 (unclipped action)


PHYSICS: Final = MappingProxyType(
    {
        "min_action": PhysicsParam(MIN_ACTION, "finite", "kMinAction"),
        "max_action": PhysicsParam(MAX_ACTION, "finite", "kMaxAction"),
        "min_position": PhysicsParam(MIN_POSITION, "finite", "kMinPosition"),
        "max_position": PhysicsParam(MAX_POSITION, "finite", "kMaxPosition"),
        "max_speed": PhysicsParam(MAX_SPEED, "positive", "kMaxSpeed"),
        "goal_position": PhysicsParam(GOAL_POSITION, "finite", "kGoalPosition"),
        "goal_velocity": PhysicsParam(GOAL_VELOCITY, "finite", "kGoalVelocity"),
        "power": PhysicsParam(POWER, "nonnegative", "kPower"),
        "gravity": PhysicsParam(GRAVITY, "nonnegative", "kGravity"),
        "goal_reward": PhysicsParam(GOAL_REWARD, "finite", "kGoalReward"),
        "action_cost": PhysicsParam(ACTION_COST, "nonnegative", "kActionCost"),
    }
)
