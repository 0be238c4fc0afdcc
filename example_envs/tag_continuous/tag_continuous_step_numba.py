"""Tag (continuous) step kernel in Numba: the twin of ``tag_continuous_step.cu`` (same arguments,
``TagContinuous.step_kernel_args``), mirroring :mod:`example_envs.tag_continuous.numpy_twin` (the
specification): :func:`move_agent` is ``move_agents``, :func:`write_full_observation` and
:func:`write_partial_observation` are ``compute_observations`` (with ``nearest_agents``),
:func:`nearest_tagger` is ``find_tags``.

One block per env (``TagContinuous.numba_block_per_env``), its threads striding over the agents; the
phases of ``numpy_twin.step`` are separated by ``cuda.syncthreads()``:

1. thread 0 advances ``_timestep_``; every agent moves and gets its step reward;
2. every agent writes its observation of the moved state; each runner in the game looks for the
   nearest tagger in reach (a tag adds 1 to that tagger's count: an integer atomic, so the result does
   not depend on thread order);
3. taggers add their tag rewards; tagged runners leave the game (if configured);
4. thread 0 writes ``_done_`` and ``_truncated_``.

Neighbours are found by scanning every pair (the CUDA C kernel's cell grid gives the same result
faster). Float arithmetic is float32 in the twin's order, each operation rounded once
(:mod:`warp_drive.numba_includes.rounding`); cos and sin are taken in float64 and rounded once.
Constants come from ``env_config`` (``TagContinuous.cuda_constants()``).
"""

import math

from numba import cuda, float32, float64, int32

from warp_drive.numba_includes.env_config import *  # noqa: F401,F403
from warp_drive.numba_includes.rounding import f32_add, f32_div, f32_mul, f32_sub

NUM_AGENTS = wkNumberAgents  # noqa: F405
NUM_TAGGERS = kNumTaggers  # noqa: F405
NUM_ACC_ACTIONS = kNumAccelerationActions  # noqa: F405
NUM_TURN_ACTIONS = kNumTurnActions  # noqa: F405
M = kNumObservedAgents  # noqa: F405  # agents in one observation (N - 1, or K nearest)
FULL_OBSERVATION = kUseFullObservation != 0  # noqa: F405
RUNNER_EXITS = kRunnerExitsGameAfterTagged != 0  # noqa: F405
TAGGER = kTaggerType  # noqa: F405
TWO_PI = kTwoPi  # noqa: F405  # float32 2 pi, as a Python float
SQRT2 = kSqrt2  # noqa: F405  # float32 sqrt(2), as a Python float
TIME_COLUMN = kNumObsFeatures * M  # noqa: F405


@cuda.jit(device=True)
def clamp_index(value, count):
    return 0 if value < 0 else (count - 1 if value >= count else value)


@cuda.jit(device=True)
def move_agent(env, agent, loc_x_arr, loc_y_arr, speed_arr, direction_arr, acceleration_arr, in_game,
               d_acc, d_turn, max_speed_agent, grid_length):
    """numpy_twin.move_agents for one agent, in place; returns whether it hit an edge."""
    two_pi = float32(TWO_PI)
    zero = float32(0.0)
    acc = f32_add(acceleration_arr[env, agent], d_acc)
    direction = float32(math.fmod(f32_add(direction_arr[env, agent], d_turn), two_pi))
    if direction < zero:
        direction = f32_add(direction, two_pi)
    if not in_game:
        direction = zero
    speed = min(max(f32_add(speed_arr[env, agent], acc), zero), max_speed_agent) if in_game else zero
    if speed <= zero or speed >= max_speed_agent:
        acc = zero
    cos_dir = float32(math.cos(float64(direction)))
    sin_dir = float32(math.sin(float64(direction)))
    x = f32_add(loc_x_arr[env, agent], f32_mul(speed, cos_dir))
    y = f32_add(loc_y_arr[env, agent], f32_mul(speed, sin_dir))
    hit = x < zero or x > grid_length or y < zero or y > grid_length
    loc_x_arr[env, agent] = min(max(x, zero), grid_length)
    loc_y_arr[env, agent] = min(max(y, zero), grid_length)
    speed_arr[env, agent] = speed
    direction_arr[env, agent] = direction
    acceleration_arr[env, agent] = acc
    return hit


@cuda.jit(device=True)
def write_relative_features(env, observer, slot, other, observed, loc_x_arr, loc_y_arr, speed_arr,
                            acceleration_arr, direction_arr, observations_arr, pos_norm, max_speed):
    """The 5 relative features of ``other`` in observation slot ``slot`` of ``observer`` (0 where not
    ``observed``): (feature[other] - feature[observer]) / scale."""
    zero = float32(0.0)
    values = (
        f32_div(f32_sub(loc_x_arr[env, other], loc_x_arr[env, observer]), pos_norm),
        f32_div(f32_sub(loc_y_arr[env, other], loc_y_arr[env, observer]), pos_norm),
        f32_div(f32_sub(speed_arr[env, other], speed_arr[env, observer]), max_speed),
        f32_div(f32_sub(acceleration_arr[env, other], acceleration_arr[env, observer]), max_speed),
        f32_div(f32_sub(direction_arr[env, other], direction_arr[env, observer]), float32(TWO_PI)),
    )
    for feature in range(5):
        observations_arr[env, observer, feature * M + slot] = values[feature] if observed else zero


@cuda.jit(device=True)
def write_full_observation(env, observer, loc_x_arr, loc_y_arr, speed_arr, acceleration_arr, direction_arr,
                           still_in_the_game_arr, agent_types_arr, observations_arr, pos_norm, max_speed,
                           time_frac):
    """compute_observations, full branch: every other agent, in id order."""
    self_in_game = still_in_the_game_arr[env, observer] != 0
    for slot in range(M):
        other = slot if slot < observer else slot + 1
        write_relative_features(env, observer, slot, other, self_in_game, loc_x_arr, loc_y_arr, speed_arr,
                                acceleration_arr, direction_arr, observations_arr, pos_norm, max_speed)
        observations_arr[env, observer, 5 * M + slot] = float32(agent_types_arr[other])
        observations_arr[env, observer, 6 * M + slot] = float32(still_in_the_game_arr[env, other])
    observations_arr[env, observer, TIME_COLUMN] = time_frac if self_in_game else float32(0.0)


@cuda.jit(device=True)
def write_partial_observation(env, observer, loc_x_arr, loc_y_arr, speed_arr, acceleration_arr, direction_arr,
                              still_in_the_game_arr, agent_types_arr, observations_arr, pos_norm, max_speed,
                              time_frac):
    """compute_observations, partial branch: the K nearest other agents in the game (nearest_agents:
    float32 squared distance, ties by lower id), in order; empty slots are zeros."""
    ids = cuda.local.array(M, int32)
    dists = cuda.local.array(M, float32)
    found = 0
    self_in_game = still_in_the_game_arr[env, observer] != 0
    if self_in_game:
        for other in range(NUM_AGENTS):
            if other == observer or still_in_the_game_arr[env, other] == 0:
                continue
            dx = f32_sub(loc_x_arr[env, other], loc_x_arr[env, observer])
            dy = f32_sub(loc_y_arr[env, other], loc_y_arr[env, observer])
            d2 = f32_add(f32_mul(dx, dx), f32_mul(dy, dy))
            if found == M and not d2 < dists[M - 1]:
                continue  # not nearer than the K-th (a tie keeps the lower id, seen first)
            slot = found if found < M else M - 1
            while slot > 0 and d2 < dists[slot - 1]:  # insertion: stable for equal distances
                ids[slot] = ids[slot - 1]
                dists[slot] = dists[slot - 1]
                slot -= 1
            ids[slot] = other
            dists[slot] = d2
            if found < M:
                found += 1
    for slot in range(M):
        present = slot < found
        other = ids[slot] if present else observer
        write_relative_features(env, observer, slot, other, present, loc_x_arr, loc_y_arr, speed_arr,
                                acceleration_arr, direction_arr, observations_arr, pos_norm, max_speed)
        observations_arr[env, observer, 5 * M + slot] = float32(agent_types_arr[other]) if present else float32(0.0)
        observations_arr[env, observer, 6 * M + slot] = float32(1.0) if present else float32(0.0)
    observations_arr[env, observer, TIME_COLUMN] = time_frac if self_in_game else float32(0.0)


@cuda.jit(device=True)
def nearest_tagger(env, runner, loc_x_arr, loc_y_arr, tagger_ids_arr):
    """find_tags for one runner: (its nearest tagger, the float32 squared distance); first minimum."""
    best = tagger_ids_arr[0]
    best_d2 = float32(0.0)
    for i in range(NUM_TAGGERS):
        tagger = tagger_ids_arr[i]
        dx = f32_sub(loc_x_arr[env, tagger], loc_x_arr[env, runner])
        dy = f32_sub(loc_y_arr[env, tagger], loc_y_arr[env, runner])
        d2 = f32_add(f32_mul(dx, dx), f32_mul(dy, dy))
        if i == 0 or d2 < best_d2:
            best = tagger
            best_d2 = d2
    return best, best_d2


@cuda.jit
def NumbaTagContinuousStep(loc_x_arr, loc_y_arr, speed_arr, direction_arr, acceleration_arr,
                           still_in_the_game_arr, edge_hit_reward_penalty_arr, tag_counts_arr, num_runners_arr,
                           agent_types_arr, tagger_ids_arr, skill_levels_arr, step_rewards_arr,
                           acceleration_actions_arr, turn_actions_arr, sampled_actions_arr, observations_arr,
                           rewards_arr, done_arr, truncated_arr, timestep_arr, grid_length, max_speed,
                           edge_hit_penalty, distance_margin_for_reward, tag_reward_for_tagger,
                           tag_penalty_for_runner, end_of_game_reward_for_runner, episode_length):
    env = cuda.blockIdx.x
    if env >= loc_x_arr.shape[0]:
        return
    first, stride = cuda.threadIdx.x, cuda.blockDim.x
    zero = float32(0.0)

    # 1. move, step reward (edge penalty + step reward; 0 out of the game), tag counts cleared
    if first == 0:
        timestep_arr[env] += 1
    for agent in range(first, NUM_AGENTS, stride):
        in_game = still_in_the_game_arr[env, agent] != 0
        a_acc = clamp_index(sampled_actions_arr[env, agent, 0], NUM_ACC_ACTIONS)
        a_turn = clamp_index(sampled_actions_arr[env, agent, 1], NUM_TURN_ACTIONS)
        hit = move_agent(env, agent, loc_x_arr, loc_y_arr, speed_arr, direction_arr, acceleration_arr, in_game,
                         acceleration_actions_arr[a_acc], turn_actions_arr[a_turn],
                         f32_mul(max_speed, skill_levels_arr[agent]), grid_length)
        edge = float32(edge_hit_penalty) if hit else zero
        edge_hit_reward_penalty_arr[env, agent] = edge
        rewards_arr[env, agent] = f32_add(edge, step_rewards_arr[agent]) if in_game else zero
        tag_counts_arr[env, agent] = 0
    cuda.syncthreads()

    # 2. observations of the moved state (before tagging); tags of the runners in the game
    t = timestep_arr[env]
    time_frac = f32_div(float32(t), float32(episode_length))
    pos_norm = f32_mul(grid_length, float32(SQRT2))
    margin_sq = f32_mul(distance_margin_for_reward, distance_margin_for_reward)
    for agent in range(first, NUM_AGENTS, stride):
        if FULL_OBSERVATION:
            write_full_observation(env, agent, loc_x_arr, loc_y_arr, speed_arr, acceleration_arr, direction_arr,
                                   still_in_the_game_arr, agent_types_arr, observations_arr, pos_norm, max_speed,
                                   time_frac)
        else:
            write_partial_observation(env, agent, loc_x_arr, loc_y_arr, speed_arr, acceleration_arr,
                                      direction_arr, still_in_the_game_arr, agent_types_arr, observations_arr,
                                      pos_norm, max_speed, time_frac)
        if agent_types_arr[agent] == TAGGER or still_in_the_game_arr[env, agent] == 0:
            continue
        tagger, d2 = nearest_tagger(env, agent, loc_x_arr, loc_y_arr, tagger_ids_arr)
        if d2 < margin_sq:
            tag_counts_arr[env, agent] = 1
            cuda.atomic.add(tag_counts_arr, (env, tagger), 1)
            rewards_arr[env, agent] = f32_add(rewards_arr[env, agent], tag_penalty_for_runner)
        elif t >= episode_length:
            rewards_arr[env, agent] = f32_add(rewards_arr[env, agent], end_of_game_reward_for_runner)
    cuda.syncthreads()

    # 3. tag rewards of the taggers; tagged runners leave the game
    for agent in range(first, NUM_AGENTS, stride):
        count = tag_counts_arr[env, agent]
        if agent_types_arr[agent] == TAGGER:
            rewards_arr[env, agent] = f32_add(rewards_arr[env, agent], f32_mul(float32(count), tag_reward_for_tagger))
        elif RUNNER_EXITS and count > 0:
            still_in_the_game_arr[env, agent] = 0
            cuda.atomic.sub(num_runners_arr, env, 1)
    cuda.syncthreads()

    # 4. episode flags
    if first == 0:
        runners_left = num_runners_arr[env] > 0
        time_up = t >= episode_length
        if time_up or not runners_left:
            done_arr[env] = 1
        truncated_arr[env] = 1 if (time_up and runners_left) else 0
