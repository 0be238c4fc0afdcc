"""ContinuousMountainCar step kernel in Numba: the twin of ``continuous_mountain_car_step.cu`` (same
arguments, same arithmetic), mirroring ``continuous_mountain_car.py:
continuous_mountain_car_transition`` and the episode bookkeeping.

gymnasium keeps this env's state in float32, so most of the step is float32 arithmetic, each
operation rounded once (:mod:`warp_drive.numba_includes.rounding`: no fused multiply-adds). One
thread per env on a flat grid. Constants come from ``env_config``
(``ClassicControlContinuousMountainCarEnv.cuda_constants()``): a float64 constant kName arrives as
floats kNameHi/Mid/Lo whose double sum is exactly the Python value. ``_done_`` = 2 on the goal.
"""

import math

from numba import cuda, float32, float64

from example_envs.classic_control.classic_control_step_numba import end_step
from warp_drive.numba_includes.env_config import *  # noqa: F401,F403
from warp_drive.numba_includes.rounding import f32_add, f32_mul, f32_sub, f64_mul

MIN_ACTION = kMinActionHi + kMinActionMid + kMinActionLo  # noqa: F405
MAX_ACTION = kMaxActionHi + kMaxActionMid + kMaxActionLo  # noqa: F405
MIN_POSITION = kMinPositionHi + kMinPositionMid + kMinPositionLo  # noqa: F405
MAX_POSITION = kMaxPositionHi + kMaxPositionMid + kMaxPositionLo  # noqa: F405
MAX_SPEED = kMaxSpeedHi + kMaxSpeedMid + kMaxSpeedLo  # noqa: F405
GOAL_POSITION = kGoalPositionHi + kGoalPositionMid + kGoalPositionLo  # noqa: F405
GOAL_VELOCITY = kGoalVelocityHi + kGoalVelocityMid + kGoalVelocityLo  # noqa: F405
POWER = kPowerHi + kPowerMid + kPowerLo  # noqa: F405
GRAVITY = kGravityHi + kGravityMid + kGravityLo  # noqa: F405
GOAL_REWARD = kGoalRewardHi + kGoalRewardMid + kGoalRewardLo  # noqa: F405
ACTION_COST = kActionCostHi + kActionCostMid + kActionCostLo  # noqa: F405
TERMINAL_DONE = kTerminalDoneValue  # noqa: F405


@cuda.jit
def NumbaClassicControlContinuousMountainCarEnvStep(state_arr, observations_arr, sampled_actions_arr,
                                                    rewards_arr, done_arr, truncated_arr, timestep_arr,
                                                    episode_length):
    env = cuda.grid(1)
    if env >= state_arr.shape[0]:
        return
    position = float32(state_arr[env, 0, 0])
    velocity = float32(state_arr[env, 0, 1])
    a = float32(sampled_actions_arr[env, 0, 0])
    clipped_low = float32(MIN_ACTION) > a
    force = float32(MIN_ACTION) if clipped_low else a
    clipped_high = float32(MAX_ACTION) < force
    slope = GRAVITY * math.cos(float64(f32_mul(float32(3.0), position)))  # float64
    if clipped_low or clipped_high:  # the Python float bound: float64 arithmetic
        bound = MIN_ACTION if clipped_low else MAX_ACTION
        dv = float32(f64_mul(bound, POWER) - slope)
    else:  # the float32 force: float32 arithmetic
        dv = f32_sub(f32_mul(a, float32(POWER)), float32(slope))
    velocity = f32_add(velocity, dv)
    max_speed = float32(MAX_SPEED)
    if velocity > max_speed:
        velocity = max_speed
    if velocity < -max_speed:
        velocity = -max_speed
    position = f32_add(position, velocity)
    if position > float32(MAX_POSITION):
        position = float32(MAX_POSITION)
    if position < float32(MIN_POSITION):
        position = float32(MIN_POSITION)
    if position == float32(MIN_POSITION) and velocity < float32(0.0):
        velocity = float32(0.0)
    terminated = position >= float32(GOAL_POSITION) and velocity >= float32(GOAL_VELOCITY)
    a64 = float64(a)
    rewards_arr[env, 0] = (GOAL_REWARD if terminated else 0.0) - f64_mul(f64_mul(a64, a64), ACTION_COST)
    state_arr[env, 0, 0] = position
    state_arr[env, 0, 1] = velocity
    observations_arr[env, 0, 0] = position
    observations_arr[env, 0, 1] = velocity
    end_step(env, terminated, TERMINAL_DONE, done_arr, truncated_arr, timestep_arr, episode_length)
