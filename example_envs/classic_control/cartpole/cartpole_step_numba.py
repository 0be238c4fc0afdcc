"""CartPole step kernel in Numba: the twin of ``cartpole_step.cu`` (same arguments, same arithmetic).

One thread per env on a flat grid (``ClassicControlEnv.cuda_step_kernel``). Constants come from
``env_config``, generated from ``ClassicControlCartPoleEnv.cuda_constants()``: a float64 constant
kName arrives as floats kNameHi/Mid/Lo whose double sum is exactly the Python value, flags as ints.
Arithmetic is float64 from the float32 state, as ``cartpole.py: cartpole_transition``.
"""

import math

from numba import cuda, float64

from warp_drive.numba_includes.env_config import *  # noqa: F401,F403

GRAVITY = kGravityHi + kGravityMid + kGravityLo  # noqa: F405
MASS_POLE = kMassPoleHi + kMassPoleMid + kMassPoleLo  # noqa: F405
TOTAL_MASS = kTotalMassHi + kTotalMassMid + kTotalMassLo  # noqa: F405
LENGTH = kLengthHi + kLengthMid + kLengthLo  # noqa: F405
POLE_MASS_LENGTH = kPoleMassLengthHi + kPoleMassLengthMid + kPoleMassLengthLo  # noqa: F405
FORCE_MAG = kForceMagHi + kForceMagMid + kForceMagLo  # noqa: F405
TAU = kTauHi + kTauMid + kTauLo  # noqa: F405
THETA_THRESHOLD = kThetaThresholdHi + kThetaThresholdMid + kThetaThresholdLo  # noqa: F405
X_THRESHOLD = kXThresholdHi + kXThresholdMid + kXThresholdLo  # noqa: F405
EULER = kKinematicsIntegrator == 0  # noqa: F405
SUTTON_BARTO = kSuttonBartoReward != 0  # noqa: F405
TERMINAL_DONE = kTerminalDoneValue  # noqa: F405


@cuda.jit
def NumbaClassicControlCartPoleEnvStep(state_arr, observations_arr, sampled_actions_arr, rewards_arr,
                                       done_arr, truncated_arr, timestep_arr, episode_length):
    env = cuda.grid(1)
    if env >= state_arr.shape[0]:
        return
    x = float64(state_arr[env, 0, 0])
    x_dot = float64(state_arr[env, 0, 1])
    theta = float64(state_arr[env, 0, 2])
    theta_dot = float64(state_arr[env, 0, 3])
    force = FORCE_MAG if sampled_actions_arr[env, 0, 0] == 1 else -FORCE_MAG
    costheta = math.cos(theta)
    sintheta = math.sin(theta)
    temp = (force + POLE_MASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASS_POLE * (costheta * costheta) / TOTAL_MASS))
    xacc = temp - POLE_MASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    if EULER:
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
    else:
        x_dot = x_dot + TAU * xacc
        x = x + TAU * x_dot
        theta_dot = theta_dot + TAU * thetaacc
        theta = theta + TAU * theta_dot
    state_arr[env, 0, 0] = x
    state_arr[env, 0, 1] = x_dot
    state_arr[env, 0, 2] = theta
    state_arr[env, 0, 3] = theta_dot
    for i in range(4):
        observations_arr[env, 0, i] = state_arr[env, 0, i]
    terminated = x < -X_THRESHOLD or x > X_THRESHOLD or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD
    if SUTTON_BARTO:
        rewards_arr[env, 0] = -1.0 if terminated else 0.0
    else:
        rewards_arr[env, 0] = 1.0
    t = timestep_arr[env] + 1  # the bookkeeping of classic_control.cuh: ClassicControlEndStep
    timestep_arr[env] = t
    time_up = t >= episode_length
    done_arr[env] = TERMINAL_DONE if terminated else (1 if time_up else 0)
    truncated_arr[env] = 1 if (time_up and not terminated) else 0
