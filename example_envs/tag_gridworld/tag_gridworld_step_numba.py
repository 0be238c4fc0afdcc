"""Tag (grid world) step kernel in Numba: the twin of ``tag_gridworld_step.cu`` (same arguments),
mirroring ``TagGridWorld.numpy_step`` and ``compute_observations`` (the specification).

One block per env (``TagGridWorld.cuda_step_kernel`` launches ``num_envs`` blocks on the numba
backend), its threads striding over the agents; the phases of a step are separated by
``cuda.syncthreads()``:

1. thread 0 advances ``_timestep_`` and clears the tag counter; every agent moves by its action
   (clipped to [0, L]); a clipped move writes the wall-hit part of its reward;
2. each tagger on the runner's cell adds 1 to ``num_taggers_on_runner`` (an integer atomic: the
   result does not depend on thread order);
3. rewards, observations of the new state, and (thread 0) ``_done_`` / ``_truncated_``.

Constants come from ``env_config`` (``TagGridWorld.cuda_constants()``). Float arithmetic is float32,
each operation rounded once (:mod:`warp_drive.numba_includes.rounding`).
"""

from numba import cuda, float32

from warp_drive.numba_includes.env_config import *  # noqa: F401,F403
from warp_drive.numba_includes.rounding import f32_add, f32_div

NUM_AGENTS = wkNumberAgents  # noqa: F405
RUNNER = NUM_AGENTS - 1  # ids 0..N-2 are taggers, N-1 is the runner
NUM_ACTIONS = kNumActions  # noqa: F405
ACTION_DX = kActionDx  # noqa: F405
ACTION_DY = kActionDy  # noqa: F405
FULL_OBSERVATION = kUseFullObservation != 0  # noqa: F405
NUM_FULL_FEATURES = kNumFullObsFeatures  # noqa: F405
OBS_DIM = kObsDim  # noqa: F405


@cuda.jit(device=True)
def clamp(value, lo, hi):
    return lo if value < lo else (hi if value > hi else value)


@cuda.jit(device=True)
def nearest_tagger(env, loc_x_arr, loc_y_arr):
    """The tagger nearest the runner (integer squared distance, first minimum = lowest id)."""
    rx = loc_x_arr[env, RUNNER]
    ry = loc_y_arr[env, RUNNER]
    best = 0
    best_d2 = -1
    for tagger in range(RUNNER):
        dx = loc_x_arr[env, tagger] - rx
        dy = loc_y_arr[env, tagger] - ry
        d2 = dx * dx + dy * dy
        if best_d2 < 0 or d2 < best_d2:
            best = tagger
            best_d2 = d2
    return best


@cuda.jit(device=True)
def write_observation(env, agent, loc_x_arr, loc_y_arr, observations_arr, time_frac, length):
    """compute_observations for one agent (README.md: the layouts)."""
    if FULL_OBSERVATION:
        for j in range(NUM_AGENTS):
            observations_arr[env, agent, j] = f32_div(float32(loc_x_arr[env, j]), length)
            observations_arr[env, agent, NUM_AGENTS + j] = f32_div(float32(loc_y_arr[env, j]), length)
            observations_arr[env, agent, 2 * NUM_AGENTS + j] = 1.0 if j == RUNNER else 0.0
            observations_arr[env, agent, 3 * NUM_AGENTS + j] = 1.0 if j == agent else 0.0
        observations_arr[env, agent, NUM_FULL_FEATURES * NUM_AGENTS] = time_frac
    else:
        target = RUNNER if agent != RUNNER else nearest_tagger(env, loc_x_arr, loc_y_arr)
        observations_arr[env, agent, 0] = f32_div(float32(loc_x_arr[env, agent]), length)
        observations_arr[env, agent, 1] = f32_div(float32(loc_y_arr[env, agent]), length)
        observations_arr[env, agent, 2] = f32_div(float32(loc_x_arr[env, target]), length)
        observations_arr[env, agent, 3] = f32_div(float32(loc_y_arr[env, target]), length)
        observations_arr[env, agent, 4] = 1.0 if agent == RUNNER else 0.0
        observations_arr[env, agent, 5] = time_frac


@cuda.jit
def NumbaTagGridWorldStep(loc_x_arr, loc_y_arr, num_taggers_on_runner_arr, sampled_actions_arr,
                          observations_arr, rewards_arr, done_arr, truncated_arr, timestep_arr,
                          wall_hit_penalty, tag_reward_for_tagger, tag_penalty_for_runner,
                          step_cost_for_tagger, world_boundary, episode_length):
    env = cuda.blockIdx.x
    if env >= loc_x_arr.shape[0]:
        return
    first, stride = cuda.threadIdx.x, cuda.blockDim.x

    # 1. move: positions clipped to [0, L]; the wall-hit part of the reward
    if first == 0:
        timestep_arr[env] += 1
        num_taggers_on_runner_arr[env] = 0
    for agent in range(first, NUM_AGENTS, stride):
        action = clamp(sampled_actions_arr[env, agent, 0], 0, NUM_ACTIONS - 1)
        new_x = loc_x_arr[env, agent] + ACTION_DX[action]
        new_y = loc_y_arr[env, agent] + ACTION_DY[action]
        x = clamp(new_x, 0, world_boundary)
        y = clamp(new_y, 0, world_boundary)
        loc_x_arr[env, agent] = x
        loc_y_arr[env, agent] = y
        rewards_arr[env, agent] = -float32(wall_hit_penalty) if (x != new_x or y != new_y) else float32(0.0)
    cuda.syncthreads()

    # 2. tag: taggers standing on the runner's cell
    for agent in range(first, RUNNER, stride):
        if loc_x_arr[env, agent] == loc_x_arr[env, RUNNER] and loc_y_arr[env, agent] == loc_y_arr[env, RUNNER]:
            cuda.atomic.add(num_taggers_on_runner_arr, env, 1)
    cuda.syncthreads()

    # 3. rewards, observations, episode flags
    tagged = num_taggers_on_runner_arr[env] > 0
    t = timestep_arr[env]
    time_frac = f32_div(float32(t), float32(episode_length))
    length = float32(world_boundary)
    for agent in range(first, NUM_AGENTS, stride):
        is_runner = agent == RUNNER
        if tagged:
            base = -float32(tag_penalty_for_runner) if is_runner else float32(tag_reward_for_tagger)
        else:
            base = float32(step_cost_for_tagger) if is_runner else -float32(step_cost_for_tagger)
        rewards_arr[env, agent] = f32_add(base, rewards_arr[env, agent])
        write_observation(env, agent, loc_x_arr, loc_y_arr, observations_arr, time_frac, length)
    if first == 0:
        time_up = t >= episode_length
        if tagged or time_up:
            done_arr[env] = 1
        truncated_arr[env] = 1 if (time_up and not tagged) else 0
