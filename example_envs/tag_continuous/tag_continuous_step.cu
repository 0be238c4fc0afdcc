// Tag (continuous) step kernels. Specification: example_envs/tag_continuous/tag_continuous.py
// (TagContinuous.numpy_step); each helper names the NumPy function it mirrors.
//
// Compiled after the generated prelude (wkNumberEnvs, wkNumberAgents, wkBlocksPerEnv and the
// constants of TagContinuous.cuda_constants()) and core_service.cuh (wkEnvId, wkAgentId).
//
// Two launch paths, same helpers, same results:
//   * wkBlocksPerEnv == 1: CudaTagContinuousStep, one fused kernel; the moved state is staged in
//     shared memory and the phases are separated by __syncthreads().
//   * wkBlocksPerEnv > 1: CudaTagContinuousMove, CudaTagContinuousObserveAndTag and
//     CudaTagContinuousFinish, launched in this order; kernel boundaries are the env-wide
//     barriers (no spin barrier, no deadlock whatever the grid size).
// Tag credits and runner counts use integer atomics, so results do not depend on thread order.
// Float arithmetic uses explicit round-to-nearest intrinsics (no FMA contraction) in the same
// order as NumPy; cos/sin are evaluated in double and rounded once to float, like the NumPy side.
// All four kernels take the same argument list (TagContinuous.step_kernel_args).

static_assert(kNumObsFeatures == 7, "the observation has 7 features per observed agent");
static_assert(kFeatureRelX == 0 && kFeatureRelY == 1 && kFeatureRelSpeed == 2 &&
                  kFeatureRelAcceleration == 3 && kFeatureRelDirection == 4 &&
                  kFeatureAgentType == 5 && kFeatureStillInTheGame == 6,
              "relative features come first, then type and in-game (constants.OBS_FEATURES)");
static_assert(kObsDim == kNumObsFeatures * kNumObservedAgents + 1, "obs = 7 M + 1");
static_assert(kNumActionHeads == 2, "actions are (acceleration index, turn index)");

// Shared-memory staging is only used by the fused one-block kernel.
constexpr int kSharedAgents = (wkBlocksPerEnv == 1) ? wkNumberAgents : 1;
// Local K-nearest list length (1 when the full observation is used).
constexpr int kNearestListLength = kUseFullObservation ? 1 : kNumObservedAgents;

// Read-only view of one env's per-agent state (global or shared memory).
struct TagEnvView {
  const float* x;
  const float* y;
  const float* speed;
  const float* acc;
  const float* dir;
  const int* type;
  const int* in_game;
};

struct TagAgentState {
  float x, y, speed, acc, dir;
};

__device__ __forceinline__ int TagClampIndex(int value, int count) {
  return value < 0 ? 0 : (value >= count ? count - 1 : value);
}

__device__ __forceinline__ float TagSquaredDistance(float x0, float y0, float x1, float y1) {
  const float dx = __fsub_rn(x1, x0);
  const float dy = __fsub_rn(y1, y0);
  return __fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy));
}

// Mirrors tag_continuous.move_agents (one agent).
__device__ TagAgentState TagMoveAgent(TagAgentState s, bool in_game, float d_acc, float d_turn,
                                      float max_speed_agent, float grid_length, bool* edge_hit) {
  TagAgentState n;
  n.acc = __fadd_rn(s.acc, d_acc);
  float dir = fmodf(__fadd_rn(s.dir, d_turn), kTwoPi);
  if (dir < 0.0f) dir = __fadd_rn(dir, kTwoPi);
  n.dir = in_game ? dir : 0.0f;
  const float speed = fminf(fmaxf(__fadd_rn(s.speed, n.acc), 0.0f), max_speed_agent);
  n.speed = in_game ? speed : 0.0f;
  if (n.speed <= 0.0f || n.speed >= max_speed_agent) n.acc = 0.0f;
  double sin_dir, cos_dir;
  sincos(static_cast<double>(n.dir), &sin_dir, &cos_dir);
  float x = __fadd_rn(s.x, __fmul_rn(n.speed, static_cast<float>(cos_dir)));
  float y = __fadd_rn(s.y, __fmul_rn(n.speed, static_cast<float>(sin_dir)));
  bool hit = false;
  if (x < 0.0f) {
    x = 0.0f;
    hit = true;
  } else if (x > grid_length) {
    x = grid_length;
    hit = true;
  }
  if (y < 0.0f) {
    y = 0.0f;
    hit = true;
  } else if (y > grid_length) {
    y = grid_length;
    hit = true;
  }
  n.x = x;
  n.y = y;
  *edge_hit = hit;
  return n;
}

// Moves agent `agent` of env `env` in global memory and writes its step reward (edge penalty +
// step reward, 0 out of the game). Mirrors the first half of TagContinuous.numpy_step.
__device__ TagAgentState TagMoveAndWrite(int env, int agent, float* loc_x_arr, float* loc_y_arr,
                                         float* speed_arr, float* direction_arr,
                                         float* acceleration_arr, const int* still_in_the_game_arr,
                                         float* edge_hit_reward_penalty_arr,
                                         const float* skill_levels_arr, const float* step_rewards_arr,
                                         const float* acceleration_actions_arr,
                                         const float* turn_actions_arr,
                                         const int* sampled_actions_arr, float* rewards_arr,
                                         float grid_length, float max_speed, float edge_hit_penalty) {
  const int row = env * wkNumberAgents + agent;
  const bool in_game = still_in_the_game_arr[row] != 0;
  const int a_acc = TagClampIndex(sampled_actions_arr[row * kNumActionHeads + 0], kNumAccelerationActions);
  const int a_turn = TagClampIndex(sampled_actions_arr[row * kNumActionHeads + 1], kNumTurnActions);
  TagAgentState s;
  s.x = loc_x_arr[row];
  s.y = loc_y_arr[row];
  s.speed = speed_arr[row];
  s.acc = acceleration_arr[row];
  s.dir = direction_arr[row];
  bool hit = false;
  const TagAgentState n =
      TagMoveAgent(s, in_game, acceleration_actions_arr[a_acc], turn_actions_arr[a_turn],
                   __fmul_rn(max_speed, skill_levels_arr[agent]), grid_length, &hit);
  loc_x_arr[row] = n.x;
  loc_y_arr[row] = n.y;
  speed_arr[row] = n.speed;
  acceleration_arr[row] = n.acc;
  direction_arr[row] = n.dir;
  const float edge = hit ? edge_hit_penalty : 0.0f;
  edge_hit_reward_penalty_arr[row] = edge;
  rewards_arr[row] = in_game ? __fadd_rn(edge, step_rewards_arr[agent]) : 0.0f;
  return n;
}

// One relative/absolute feature of `other` seen by `self` (compute_observations, `rel` rows).
__device__ __forceinline__ float TagFeature(int feature, int self, int other, const TagEnvView& v,
                                           float pos_norm, float max_speed) {
  switch (feature) {
    case kFeatureRelX:
      return __fdiv_rn(__fsub_rn(v.x[other], v.x[self]), pos_norm);
    case kFeatureRelY:
      return __fdiv_rn(__fsub_rn(v.y[other], v.y[self]), pos_norm);
    case kFeatureRelSpeed:
      return __fdiv_rn(__fsub_rn(v.speed[other], v.speed[self]), max_speed);
    case kFeatureRelAcceleration:
      return __fdiv_rn(__fsub_rn(v.acc[other], v.acc[self]), max_speed);
    case kFeatureRelDirection:
      return __fdiv_rn(__fsub_rn(v.dir[other], v.dir[self]), kTwoPi);
    case kFeatureAgentType:
      return static_cast<float>(v.type[other]);
    default:
      return static_cast<float>(v.in_game[other]);
  }
}

// Full observation, element `column` of observer `observer` (compute_observations, full branch).
__device__ float TagFullObservationValue(int observer, int column, const TagEnvView& v,
                                         float pos_norm, float max_speed, float time_frac) {
  const bool self_in_game = v.in_game[observer] != 0;
  if (column == kObsDim - 1) return self_in_game ? time_frac : 0.0f;
  const int feature = column / kNumObservedAgents;
  const int slot = column - feature * kNumObservedAgents;
  const int other = slot < observer ? slot : slot + 1;
  if (!self_in_game && feature < kFeatureAgentType) return 0.0f;
  return TagFeature(feature, observer, other, v, pos_norm, max_speed);
}

// Full observations of rows [first_row, first_row + num_rows) of env `env`; the threads of the
// block share the work element by element, so consecutive threads write consecutive floats.
__device__ void TagWriteFullObservationRows(int env, int first_row, int num_rows,
                                            const TagEnvView& v, float* observations_arr,
                                            float pos_norm, float max_speed, float time_frac) {
  float* out = observations_arr +
               (static_cast<long long>(env) * wkNumberAgents + first_row) * kObsDim;
  const int total = num_rows * kObsDim;
  for (int k = threadIdx.x; k < total; k += blockDim.x) {
    const int r = k / kObsDim;
    out[k] = TagFullObservationValue(first_row + r, k - r * kObsDim, v, pos_norm, max_speed, time_frac);
  }
}

// Partial observation of `observer` (compute_observations + nearest_agents): the K nearest other
// agents still in the game. The sorted list (squared distance, then lower id) lives in registers:
// a candidate closer than the current K-th is placed before the first entry strictly farther away
// (so equal distances keep the lower id: ids arrive in order) and the tail shifts down by one.
__device__ void TagWritePartialObservation(int observer, const TagEnvView& v, float* obs_row,
                                           float pos_norm, float max_speed, float time_frac) {
  if (v.in_game[observer] == 0) {
    for (int c = 0; c < kObsDim; ++c) obs_row[c] = 0.0f;
    return;
  }
  float best_d2[kNearestListLength];
  int best_id[kNearestListLength];
#pragma unroll
  for (int s = 0; s < kNearestListLength; ++s) {
    best_d2[s] = INFINITY;
    best_id[s] = -1;
  }
  float threshold = INFINITY;  // the K-th smallest distance so far
  const float xs = v.x[observer];
  const float ys = v.y[observer];
  for (int j = 0; j < wkNumberAgents; ++j) {
    if (j == observer || v.in_game[j] == 0) continue;
    const float d2 = TagSquaredDistance(xs, ys, v.x[j], v.y[j]);
    if (!(d2 < threshold)) continue;
    float carry_d2 = d2;
    int carry_id = j;
    bool shifting = false;  // once placed, the rest of the list moves down by one
#pragma unroll
    for (int s = 0; s < kNearestListLength; ++s) {
      if (shifting || carry_d2 < best_d2[s]) {
        shifting = true;
        const float d = best_d2[s];
        const int id = best_id[s];
        best_d2[s] = carry_d2;
        best_id[s] = carry_id;
        carry_d2 = d;
        carry_id = id;
      }
    }
    threshold = best_d2[kNearestListLength - 1];
  }
#pragma unroll
  for (int slot = 0; slot < kNearestListLength; ++slot) {
    const int other = best_id[slot];
    for (int f = 0; f < kNumObsFeatures; ++f) {
      obs_row[f * kNumObservedAgents + slot] =
          other >= 0 ? TagFeature(f, observer, other, v, pos_norm, max_speed) : 0.0f;
    }
  }
  obs_row[kObsDim - 1] = time_frac;
}

// Mirrors tag_continuous.find_tags for one runner: the nearest tagger strictly closer than the
// margin (squared distances), lowest id on ties; -1 when no tagger is in reach.
__device__ int TagNearestTaggerInReach(int runner, const TagEnvView& v, const int* tagger_ids_arr,
                                       float margin) {
  int best = -1;
  float best_d2 = __fmul_rn(margin, margin);
  for (int k = 0; k < kNumTaggers; ++k) {
    const int tagger = tagger_ids_arr[k];
    const float d2 = TagSquaredDistance(v.x[runner], v.y[runner], v.x[tagger], v.y[tagger]);
    if (d2 < best_d2) {
      best_d2 = d2;
      best = tagger;
    }
  }
  return best;
}

// Last part of TagContinuous.numpy_step for one agent: tagger credit, end-of-game reward (not for
// a runner tagged on this step), runner leaving the game.
__device__ void TagFinishAgent(int row, bool is_tagger, int tag_count, bool last_step,
                               int* still_in_the_game_arr, float* rewards_arr,
                               float tag_reward_for_tagger, float end_of_game_reward_for_runner) {
  if (is_tagger) {
    rewards_arr[row] =
        __fadd_rn(rewards_arr[row], __fmul_rn(static_cast<float>(tag_count), tag_reward_for_tagger));
    return;
  }
  const bool was_in_game = still_in_the_game_arr[row] != 0;
  if (was_in_game && tag_count == 0 && last_step) {
    rewards_arr[row] = __fadd_rn(rewards_arr[row], end_of_game_reward_for_runner);
  }
  if (kRunnerExitsGameAfterTagged && tag_count != 0) still_in_the_game_arr[row] = 0;
}

__device__ __forceinline__ float TagTimeFraction(int t, int episode_length) {
  return __fdiv_rn(static_cast<float>(t), static_cast<float>(episode_length));
}

// ------------------------------------------------------------------------------------------
// Fused kernel: one block per env (wkBlocksPerEnv == 1).
extern "C" __global__ void CudaTagContinuousStep(
    float* loc_x_arr, float* loc_y_arr, float* speed_arr, float* direction_arr,
    float* acceleration_arr, int* still_in_the_game_arr, float* edge_hit_reward_penalty_arr,
    int* tag_counts_arr, int* num_runners_arr, const int* agent_types_arr,
    const int* tagger_ids_arr, const float* skill_levels_arr, const float* step_rewards_arr,
    const float* acceleration_actions_arr, const float* turn_actions_arr,
    const int* sampled_actions_arr, float* observations_arr, float* rewards_arr, int* done_arr,
    int* timestep_arr, float grid_length, float max_speed, float edge_hit_penalty,
    float distance_margin_for_reward, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float end_of_game_reward_for_runner, int episode_length) {
  if (wkBlocksPerEnv != 1) return;  // the host launches the phase kernels instead
  __shared__ float sh_x[kSharedAgents];
  __shared__ float sh_y[kSharedAgents];
  __shared__ float sh_speed[kSharedAgents];
  __shared__ float sh_acc[kSharedAgents];
  __shared__ float sh_dir[kSharedAgents];
  __shared__ int sh_type[kSharedAgents];
  __shared__ int sh_in_game[kSharedAgents];
  __shared__ int sh_tag_counts[kSharedAgents];
  __shared__ int sh_runners_out;

  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool valid = agent < wkNumberAgents;
  const int row = env * wkNumberAgents + agent;

  // Phase 1: move (registers -> global and shared).
  if (threadIdx.x == 0) {
    sh_runners_out = 0;
    timestep_arr[env] += 1;
  }
  if (valid) {
    const TagAgentState n = TagMoveAndWrite(
        env, agent, loc_x_arr, loc_y_arr, speed_arr, direction_arr, acceleration_arr,
        still_in_the_game_arr, edge_hit_reward_penalty_arr, skill_levels_arr, step_rewards_arr,
        acceleration_actions_arr, turn_actions_arr, sampled_actions_arr, rewards_arr, grid_length,
        max_speed, edge_hit_penalty);
    sh_x[agent] = n.x;
    sh_y[agent] = n.y;
    sh_speed[agent] = n.speed;
    sh_acc[agent] = n.acc;
    sh_dir[agent] = n.dir;
    sh_type[agent] = agent_types_arr[agent];
    sh_in_game[agent] = still_in_the_game_arr[row];
    sh_tag_counts[agent] = 0;
  }
  __syncthreads();

  // Phase 2: observe (state before tagging), then tag.
  const int t = timestep_arr[env];
  const float time_frac = TagTimeFraction(t, episode_length);
  const float pos_norm = __fmul_rn(grid_length, kSqrt2);
  const TagEnvView view = {sh_x, sh_y, sh_speed, sh_acc, sh_dir, sh_type, sh_in_game};
  if (kUseFullObservation) {
    TagWriteFullObservationRows(env, 0, wkNumberAgents, view, observations_arr, pos_norm, max_speed,
                                time_frac);
  } else if (valid) {
    TagWritePartialObservation(agent, view, observations_arr + static_cast<long long>(row) * kObsDim,
                               pos_norm, max_speed, time_frac);
  }
  if (valid && sh_type[agent] != kTaggerType && sh_in_game[agent] != 0) {
    const int tagger = TagNearestTaggerInReach(agent, view, tagger_ids_arr, distance_margin_for_reward);
    if (tagger >= 0) {
      atomicAdd(&sh_tag_counts[tagger], 1);
      sh_tag_counts[agent] = 1;
      rewards_arr[row] = __fadd_rn(rewards_arr[row], tag_penalty_for_runner);
      if (kRunnerExitsGameAfterTagged) atomicAdd(&sh_runners_out, 1);
    }
  }
  __syncthreads();

  // Phase 3: finish.
  if (valid) {
    const int count = sh_tag_counts[agent];
    tag_counts_arr[row] = count;
    TagFinishAgent(row, sh_type[agent] == kTaggerType, count, t >= episode_length,
                   still_in_the_game_arr, rewards_arr, tag_reward_for_tagger,
                   end_of_game_reward_for_runner);
  }
  if (threadIdx.x == 0) {
    const int runners_left = num_runners_arr[env] - sh_runners_out;
    num_runners_arr[env] = runners_left;
    if (t >= episode_length || runners_left == 0) done_arr[env] = 1;
  }
}

// ------------------------------------------------------------------------------------------
// Phase kernels: several blocks per env (wkBlocksPerEnv > 1), launched in this order.

// Phase 1: move every agent, write its step reward, clear its tag count; agent 0 advances time.
extern "C" __global__ void CudaTagContinuousMove(
    float* loc_x_arr, float* loc_y_arr, float* speed_arr, float* direction_arr,
    float* acceleration_arr, int* still_in_the_game_arr, float* edge_hit_reward_penalty_arr,
    int* tag_counts_arr, int* num_runners_arr, const int* agent_types_arr,
    const int* tagger_ids_arr, const float* skill_levels_arr, const float* step_rewards_arr,
    const float* acceleration_actions_arr, const float* turn_actions_arr,
    const int* sampled_actions_arr, float* observations_arr, float* rewards_arr, int* done_arr,
    int* timestep_arr, float grid_length, float max_speed, float edge_hit_penalty,
    float distance_margin_for_reward, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float end_of_game_reward_for_runner, int episode_length) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (env >= wkNumberEnvs || agent >= wkNumberAgents) return;
  TagMoveAndWrite(env, agent, loc_x_arr, loc_y_arr, speed_arr, direction_arr, acceleration_arr,
                  still_in_the_game_arr, edge_hit_reward_penalty_arr, skill_levels_arr,
                  step_rewards_arr, acceleration_actions_arr, turn_actions_arr, sampled_actions_arr,
                  rewards_arr, grid_length, max_speed, edge_hit_penalty);
  tag_counts_arr[env * wkNumberAgents + agent] = 0;
  if (agent == 0) timestep_arr[env] += 1;
}

// Phase 2: observations from the moved state (in-game flags before tagging), then tags: the
// tagger's count and the env's runner count change by integer atomics; the runner's own
// still_in_the_game flag changes only in phase 3, so every observer reads the same flags.
extern "C" __global__ void CudaTagContinuousObserveAndTag(
    float* loc_x_arr, float* loc_y_arr, float* speed_arr, float* direction_arr,
    float* acceleration_arr, int* still_in_the_game_arr, float* edge_hit_reward_penalty_arr,
    int* tag_counts_arr, int* num_runners_arr, const int* agent_types_arr,
    const int* tagger_ids_arr, const float* skill_levels_arr, const float* step_rewards_arr,
    const float* acceleration_actions_arr, const float* turn_actions_arr,
    const int* sampled_actions_arr, float* observations_arr, float* rewards_arr, int* done_arr,
    int* timestep_arr, float grid_length, float max_speed, float edge_hit_penalty,
    float distance_margin_for_reward, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float end_of_game_reward_for_runner, int episode_length) {
  const int env = wkEnvId();
  if (env >= wkNumberEnvs) return;
  const int agent = wkAgentId();
  const bool valid = agent < wkNumberAgents;
  const int base = env * wkNumberAgents;
  const int row = base + agent;
  const TagEnvView view = {loc_x_arr + base, loc_y_arr + base, speed_arr + base,
                           acceleration_arr + base, direction_arr + base, agent_types_arr,
                           still_in_the_game_arr + base};
  const float time_frac = TagTimeFraction(timestep_arr[env], episode_length);
  const float pos_norm = __fmul_rn(grid_length, kSqrt2);
  if (kUseFullObservation) {
    const int first_row = (static_cast<int>(blockIdx.x) % wkBlocksPerEnv) * static_cast<int>(blockDim.x);
    const int num_rows = min(static_cast<int>(blockDim.x), wkNumberAgents - first_row);
    if (num_rows > 0) {
      TagWriteFullObservationRows(env, first_row, num_rows, view, observations_arr, pos_norm,
                                  max_speed, time_frac);
    }
  } else if (valid) {
    TagWritePartialObservation(agent, view, observations_arr + static_cast<long long>(row) * kObsDim,
                               pos_norm, max_speed, time_frac);
  }
  if (valid && agent_types_arr[agent] != kTaggerType && still_in_the_game_arr[row] != 0) {
    const int tagger = TagNearestTaggerInReach(agent, view, tagger_ids_arr, distance_margin_for_reward);
    if (tagger >= 0) {
      atomicAdd(&tag_counts_arr[base + tagger], 1);
      tag_counts_arr[row] = 1;
      rewards_arr[row] = __fadd_rn(rewards_arr[row], tag_penalty_for_runner);
      if (kRunnerExitsGameAfterTagged) atomicSub(&num_runners_arr[env], 1);
    }
  }
}

// Phase 3: tagger credit, end-of-game reward, runners leave the game, done flag.
extern "C" __global__ void CudaTagContinuousFinish(
    float* loc_x_arr, float* loc_y_arr, float* speed_arr, float* direction_arr,
    float* acceleration_arr, int* still_in_the_game_arr, float* edge_hit_reward_penalty_arr,
    int* tag_counts_arr, int* num_runners_arr, const int* agent_types_arr,
    const int* tagger_ids_arr, const float* skill_levels_arr, const float* step_rewards_arr,
    const float* acceleration_actions_arr, const float* turn_actions_arr,
    const int* sampled_actions_arr, float* observations_arr, float* rewards_arr, int* done_arr,
    int* timestep_arr, float grid_length, float max_speed, float edge_hit_penalty,
    float distance_margin_for_reward, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float end_of_game_reward_for_runner, int episode_length) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (env >= wkNumberEnvs || agent >= wkNumberAgents) return;
  const int row = env * wkNumberAgents + agent;
  const int t = timestep_arr[env];
  TagFinishAgent(row, agent_types_arr[agent] == kTaggerType, tag_counts_arr[row],
                 t >= episode_length, still_in_the_game_arr, rewards_arr, tag_reward_for_tagger,
                 end_of_game_reward_for_runner);
  if (agent == 0 && (t >= episode_length || num_runners_arr[env] == 0)) done_arr[env] = 1;
}
