"""MountainCar step kernel in Numba: the twin of ``mountain_car_step.cu`` (same arguments, same
arithmetic), mirroring ``mountain_car.py: mountain_car_transition`` and the episode bookkeeping.

One thread per env on a flat grid. Constants come from ``env_config``
(``ClassicControlMountainCarEnv.cuda_constants()``): a float64 constant kName arrives as floats
kNameHi/Mid/Lo whose double sum is exactly the Python value. Float64 from the float32 state.
``_done_`` = 2 when the goal is reached (``kTerminalDoneValue``).
"""

import math

from numba import cuda, float64

from example_envs.classic_control.classic_control_step_numba import clip, end_step
from warp_drive.numba_includes.env_config import *  # noqa: F401,F403

MIN_POSITION = kMinPositionHi + kMinPositionMid + kMinPositionLo  # noqa: F405
MAX_POSITION = kMaxPositionHi + kMaxPositionMid + kMaxPositionLo  # noqa: F405
MAX_SPEED = kMaxSpeedHi + kMaxSpeedMid + kMaxSpeedLo  # noqa: F405
GOAL_POSITION = kGoalPositionHi + kGoalPositionMid + kGoalPositionLo  # noqa: F405
GOAL_VELOCITY = kGoalVelocityHi + kGoalVelocityMid + kGoalVelocityLo  # noqa: F405
FORCE = kForceHi + kForceMid + kForceLo  # noqa: F405
GRAVITY = kGravityHi + kGravityMid + kGravityLo  # noqa: F405
TERMINAL_DONE = kTerminalDoneValue  # noqa: F405


@cuda.jit
def NumbaClassicControlMountainCarEnvStep(state_arr, observations_arr, sampled_actions_arr, rewards_arr,
                                          done_arr, truncated_arr, timestep_arr, episode_length):
    env = cuda.grid(1)
    if env >= state_arr.shape[0]:
        return
    position = float64(state_arr[env, 0, 0])
    velocity = float64(state_arr[env, 0, 1])
    push = float64(sampled_actions_arr[env, 0, 0] - 1)  # any integer action, as gymnasium
    velocity = velocity + (push * FORCE + math.cos(3 * position) * (-GRAVITY))
    velocity = clip(velocity, -MAX_SPEED, MAX_SPEED)
    position = position + velocity
    position = clip(position, MIN_POSITION, MAX_POSITION)
    if position == MIN_POSITION and velocity < 0:
        velocity = 0.0
    terminated = position >= GOAL_POSITION and velocity >= GOAL_VELOCITY
    state_arr[env, 0, 0] = position
    state_arr[env, 0, 1] = velocity
    observations_arr[env, 0, 0] = state_arr[env, 0, 0]
    observations_arr[env, 0, 1] = state_arr[env, 0, 1]
    rewards_arr[env, 0] = -1.0
    end_step(env, terminated, TERMINAL_DONE, done_arr, truncated_arr, timestep_arr, episode_length)
