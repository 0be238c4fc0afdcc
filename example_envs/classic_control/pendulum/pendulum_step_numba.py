"""Pendulum step kernel in Numba: the twin of ``pendulum_step.cu`` (same arguments, same arithmetic),
mirroring ``pendulum.py: pendulum_transition`` and ``angle_normalize``, and the episode bookkeeping.

The state arithmetic is float64, the torque's float32 (gymnasium keeps the torque float32); every
operation is rounded once (:mod:`warp_drive.numba_includes.rounding`: no fused multiply-adds), in
the NumPy twin's order. Float64 squares are products (gymnasium's scalar ``x**2`` is C pow, at most
one float64 ulp apart). One thread per env on a flat grid. Constants come from ``env_config``
(``ClassicControlPendulumEnv.cuda_constants()``): a float64 constant kName arrives as floats
kNameHi/Mid/Lo whose double sum is exactly the Python value. Never terminates.
"""

import math

from numba import cuda, float32, float64

from example_envs.classic_control.classic_control_step_numba import clip, end_step
from warp_drive.numba_includes.env_config import *  # noqa: F401,F403
from warp_drive.numba_includes.rounding import f32_mul, f64_add, f64_mul

MAX_SPEED = kMaxSpeedHi + kMaxSpeedMid + kMaxSpeedLo  # noqa: F405
MAX_TORQUE = kMaxTorqueHi + kMaxTorqueMid + kMaxTorqueLo  # noqa: F405
DT = kDtHi + kDtMid + kDtLo  # noqa: F405
GRAVITY_COEF = kGravityCoefHi + kGravityCoefMid + kGravityCoefLo  # noqa: F405  # 3 g / (2 l)
TORQUE_COEF = kTorqueCoefHi + kTorqueCoefMid + kTorqueCoefLo  # noqa: F405  # 3 / (m l^2)
THETA_DOT_COST = kThetaDotCostHi + kThetaDotCostMid + kThetaDotCostLo  # noqa: F405
TORQUE_COST = kTorqueCostHi + kTorqueCostMid + kTorqueCostLo  # noqa: F405
TERMINAL_DONE = kTerminalDoneValue  # noqa: F405
PI = 3.141592653589793  # numpy.pi


@cuda.jit(device=True)
def angle_normalize(x):
    """pendulum.py: angle_normalize, ``((x + pi) % (2 pi)) - pi`` (floor-mod, as NumPy's ``%``)."""
    return ((x + PI) % (2 * PI)) - PI


@cuda.jit
def NumbaClassicControlPendulumEnvStep(state_arr, observations_arr, sampled_actions_arr, rewards_arr,
                                       done_arr, truncated_arr, timestep_arr, episode_length):
    env = cuda.grid(1)
    if env >= state_arr.shape[0]:
        return
    th = float64(state_arr[env, 0, 0])
    thdot = float64(state_arr[env, 0, 1])
    u = clip(float32(sampled_actions_arr[env, 0, 0]), -float32(MAX_TORQUE), float32(MAX_TORQUE))
    an = angle_normalize(th)
    torque_cost = f32_mul(float32(TORQUE_COST), f32_mul(u, u))
    costs = f64_add(f64_add(f64_mul(an, an), f64_mul(THETA_DOT_COST, f64_mul(thdot, thdot))), float64(torque_cost))
    torque_term = f32_mul(float32(TORQUE_COEF), u)
    newthdot = f64_add(thdot, f64_mul(f64_add(f64_mul(GRAVITY_COEF, math.sin(th)), float64(torque_term)), DT))
    newthdot = clip(newthdot, -MAX_SPEED, MAX_SPEED)
    newth = f64_add(th, f64_mul(newthdot, DT))
    state_arr[env, 0, 0] = newth
    state_arr[env, 0, 1] = newthdot
    observations_arr[env, 0, 0] = math.cos(newth)
    observations_arr[env, 0, 1] = math.sin(newth)
    observations_arr[env, 0, 2] = newthdot
    rewards_arr[env, 0] = -costs
    end_step(env, False, TERMINAL_DONE, done_arr, truncated_arr, timestep_arr, episode_length)
