"""Acrobot step kernel in Numba: the twin of ``acrobot_step.cu`` (same arguments, same arithmetic).

Mirrors ``acrobot.py``: :func:`dsdt` is ``acrobot_dsdt``, :func:`rk4` ``acrobot_rk4``, :func:`wrap`
``wrap_angle``, the kernel ``acrobot_transition`` with the episode bookkeeping. One thread per env
on a flat grid. Constants come from ``env_config`` (``ClassicControlAcrobotEnv.cuda_constants()``): a
float64 constant kName arrives as floats kNameHi/Mid/Lo whose double sum is exactly the Python value.
Arithmetic is float64 from the float32 state; squares of state terms are products (gymnasium's scalar
``x**2`` is C pow, at most one float64 ulp apart).
"""

import math

from numba import cuda, float64

from example_envs.classic_control.classic_control_step_numba import clip, end_step
from warp_drive.numba_includes.env_config import *  # noqa: F401,F403

DT = kDtHi + kDtMid + kDtLo  # noqa: F405
L1 = kLinkLength1Hi + kLinkLength1Mid + kLinkLength1Lo  # noqa: F405
M1 = kLinkMass1Hi + kLinkMass1Mid + kLinkMass1Lo  # noqa: F405
M2 = kLinkMass2Hi + kLinkMass2Mid + kLinkMass2Lo  # noqa: F405
LC1 = kLinkComPos1Hi + kLinkComPos1Mid + kLinkComPos1Lo  # noqa: F405
LC2 = kLinkComPos2Hi + kLinkComPos2Mid + kLinkComPos2Lo  # noqa: F405
MOI = kLinkMoiHi + kLinkMoiMid + kLinkMoiLo  # noqa: F405
MAX_VEL_1 = kMaxVel1Hi + kMaxVel1Mid + kMaxVel1Lo  # noqa: F405
MAX_VEL_2 = kMaxVel2Hi + kMaxVel2Mid + kMaxVel2Lo  # noqa: F405
G = kGravityHi + kGravityMid + kGravityLo  # noqa: F405
L1_SQ = kLinkLength1SqHi + kLinkLength1SqMid + kLinkLength1SqLo  # noqa: F405
LC1_SQ = kLinkComPos1SqHi + kLinkComPos1SqMid + kLinkComPos1SqLo  # noqa: F405
LC2_SQ = kLinkComPos2SqHi + kLinkComPos2SqMid + kLinkComPos2SqLo  # noqa: F405
TORQUE_0 = kAvailTorque0Hi + kAvailTorque0Mid + kAvailTorque0Lo  # noqa: F405
TORQUE_1 = kAvailTorque1Hi + kAvailTorque1Mid + kAvailTorque1Lo  # noqa: F405
TORQUE_2 = kAvailTorque2Hi + kAvailTorque2Mid + kAvailTorque2Lo  # noqa: F405
NUM_ACTIONS = kNumActions  # noqa: F405
MAX_WRAP_ITERATIONS = kMaxWrapIterations  # noqa: F405
TERMINAL_DONE = kTerminalDoneValue  # noqa: F405
PI = 3.141592653589793  # numpy.pi


@cuda.jit(device=True)
def dsdt(theta1, theta2, dtheta1, dtheta2, torque):
    """acrobot.py: acrobot_dsdt (gymnasium's "book" equations) -> the four derivatives."""
    d1 = M1 * LC1_SQ + M2 * (L1_SQ + LC2_SQ + 2 * L1 * LC2 * math.cos(theta2)) + MOI + MOI
    d2 = M2 * (LC2_SQ + L1 * LC2 * math.cos(theta2)) + MOI
    phi2 = M2 * LC2 * G * math.cos(theta1 + theta2 - PI / 2.0)
    phi1 = (-M2 * L1 * LC2 * (dtheta2 * dtheta2) * math.sin(theta2)
            - 2 * M2 * L1 * LC2 * dtheta2 * dtheta1 * math.sin(theta2)
            + (M1 * LC1 + M2 * L1) * G * math.cos(theta1 - PI / 2)
            + phi2)
    ddtheta2 = ((torque + d2 / d1 * phi1 - M2 * L1 * LC2 * (dtheta1 * dtheta1) * math.sin(theta2) - phi2)
                / (M2 * LC2_SQ + MOI - (d2 * d2) / d1))
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


@cuda.jit(device=True)
def rk4(y0, y1, y2, y3, torque):
    """acrobot.py: acrobot_rk4 (one RK4 step over [0, dt], constant torque)."""
    h = DT / 2.0
    a0, a1, a2, a3 = dsdt(y0, y1, y2, y3, torque)
    b0, b1, b2, b3 = dsdt(y0 + h * a0, y1 + h * a1, y2 + h * a2, y3 + h * a3, torque)
    c0, c1, c2, c3 = dsdt(y0 + h * b0, y1 + h * b1, y2 + h * b2, y3 + h * b3, torque)
    d0, d1, d2, d3 = dsdt(y0 + DT * c0, y1 + DT * c1, y2 + DT * c2, y3 + DT * c3, torque)
    w = DT / 6.0
    return (y0 + w * (a0 + 2 * b0 + 2 * c0 + d0), y1 + w * (a1 + 2 * b1 + 2 * c1 + d1),
            y2 + w * (a2 + 2 * b2 + 2 * c2 + d2), y3 + w * (a3 + 2 * b3 + 2 * c3 + d3))


@cuda.jit(device=True)
def wrap(x):
    """acrobot.py: wrap_angle (gymnasium's wrap(x, -pi, pi), loops bounded)."""
    diff = PI - (-PI)
    i = 0
    while i < MAX_WRAP_ITERATIONS and x > PI:
        x = x - diff
        i += 1
    i = 0
    while i < MAX_WRAP_ITERATIONS and x < -PI:
        x = x + diff
        i += 1
    return x


@cuda.jit
def NumbaClassicControlAcrobotEnvStep(state_arr, observations_arr, sampled_actions_arr, rewards_arr,
                                      done_arr, truncated_arr, timestep_arr, episode_length):
    env = cuda.grid(1)
    if env >= state_arr.shape[0]:
        return
    action = min(max(sampled_actions_arr[env, 0, 0], 0), NUM_ACTIONS - 1)
    torque = TORQUE_0 if action == 0 else (TORQUE_1 if action == 1 else TORQUE_2)
    s0, s1, s2, s3 = rk4(float64(state_arr[env, 0, 0]), float64(state_arr[env, 0, 1]),
                         float64(state_arr[env, 0, 2]), float64(state_arr[env, 0, 3]), torque)
    s0 = wrap(s0)
    s1 = wrap(s1)
    s2 = clip(s2, -MAX_VEL_1, MAX_VEL_1)
    s3 = clip(s3, -MAX_VEL_2, MAX_VEL_2)
    terminated = -math.cos(s0) - math.cos(s1 + s0) > 1.0
    state_arr[env, 0, 0] = s0
    state_arr[env, 0, 1] = s1
    state_arr[env, 0, 2] = s2
    state_arr[env, 0, 3] = s3
    observations_arr[env, 0, 0] = math.cos(s0)
    observations_arr[env, 0, 1] = math.sin(s0)
    observations_arr[env, 0, 2] = math.cos(s1)
    observations_arr[env, 0, 3] = math.sin(s1)
    observations_arr[env, 0, 4] = s2
    observations_arr[env, 0, 5] = s3
    rewards_arr[env, 0] = 0.0 if terminated else -1.0
    end_step(env, terminated, TERMINAL_DONE, done_arr, truncated_arr, timestep_arr, episode_length)
