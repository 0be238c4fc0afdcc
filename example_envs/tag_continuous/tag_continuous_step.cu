// Tag (continuous) step kernels. Specification: example_envs/tag_continuous/tag_continuous.py
// (TagContinuous.numpy_step); each helper names the NumPy function it mirrors.
//
// Compiled after the generated prelude (wkNumberEnvs, wkNumberAgents, wkBlocksPerEnv,
// wkThreadsPerBlock and the constants of TagContinuous.cuda_constants()) and core_service.cuh
// (wkEnvId, wkAgentId). Neighbour searches: tag_neighbours.cuh.
//
// Two launch paths, same results:
//   * wkBlocksPerEnv == 1: CudaTagContinuousStep, one fused kernel; the moved state is staged in
//     shared memory and the phases are separated by __syncthreads(). The agents are sorted into
//     a grid of cells every step, the K-nearest and tag searches visit only cells near the
//     observer (exact), and each warp writes the observation rows of the observers it searched for
//     as soon as its searches end (no block barrier), through per-warp staging rows. Its shared memory is dynamic: the kernel states the size in
//     CudaTagContinuousStep_dynamic_shared_bytes and the function manager launches with it.
//   * wkBlocksPerEnv > 1: CudaTagContinuousMove, CudaTagContinuousObserveAndTag and
//     CudaTagContinuousFinish, launched in this order; kernel boundaries are the env-wide
//     barriers (no spin barrier, no deadlock whatever the grid size). Brute-force searches.
// Tag credits and runner counts use integer atomics, so results do not depend on thread order.
// Float arithmetic uses explicit round-to-nearest intrinsics (no FMA contraction) in the same
// order as NumPy; cos/sin are evaluated in double and rounded once to float, like the NumPy side.
// The fused kernel takes TagContinuous.step_kernel_args; each phase kernel takes only the
// arguments it uses (TagContinuous.phase_kernels), in the same relative order.

static_assert(kNumObsFeatures == 7, "the observation has 7 features per observed agent");
static_assert(kFeatureRelX == 0 && kFeatureRelY == 1 && kFeatureRelSpeed == 2 &&
                  kFeatureRelAcceleration == 3 && kFeatureRelDirection == 4 &&
                  kFeatureAgentType == 5 && kFeatureStillInTheGame == 6,
              "relative features come first, then type and in-game (constants.OBS_FEATURES)");
static_assert(kObsDim == kNumObsFeatures * kNumObservedAgents + 1, "obs = 7 M + 1");
static_assert(kNumActionHeads == 2, "actions are (acceleration index, turn index)");

#include "tag_neighbours.cuh"

// ------------------------------------------------------------------------------------------
// Shared memory of the fused kernel (one dynamic buffer; byte offsets, 16-byte aligned).
constexpr int kFusedAgents = (wkBlocksPerEnv == 1) ? wkNumberAgents : 1;
constexpr int kSlots = kFusedAgents + kCandidateBatch;  // slot arrays are read kCandidateBatch at a time
// The grid is built for the K-nearest search, and for the tag search when it has several cells.
constexpr bool kBuildGrid = (wkBlocksPerEnv == 1) && (!kUseFullObservation || kGridSide > 1);
static_assert(!kBuildGrid || kGridCells <= wkNumberAgents, "the cell scan uses one thread per cell");
static_assert(wkNumberAgents <= 32767, "agent ids are stored as short in shared memory");

__host__ __device__ constexpr int TagAlign16(int bytes) { return (bytes + 15) / 16 * 16; }
constexpr int kOffX = 0;
constexpr int kOffY = kOffX + TagAlign16(4 * kFusedAgents);
constexpr int kOffSpeed = kOffY + TagAlign16(4 * kFusedAgents);
constexpr int kOffAcc = kOffSpeed + TagAlign16(4 * kFusedAgents);
constexpr int kOffDir = kOffAcc + TagAlign16(4 * kFusedAgents);
constexpr int kOffSlotXY = kOffDir + TagAlign16(4 * kFusedAgents);
constexpr int kOffCellStart = kOffSlotXY + TagAlign16(8 * kSlots);
constexpr int kOffSlotCode = kOffCellStart + TagAlign16(4 * (kGridCells + 1));
constexpr int kOffInGame = kOffSlotCode + TagAlign16(2 * kSlots);
constexpr int kOffTable = kOffInGame + TagAlign16(kFusedAgents);
// With the partial observation, each warp puts its observers' K neighbour ids in its own shared
// table, assembles kStageRows observation rows at a time in shared memory, then copies them out
// row by row. Both must keep the block within 99 KiB and within what the device allows
// (wkMaxSharedBytesPerBlock, less 1 KiB for the static variables); otherwise each thread writes
// its own row.
constexpr int kSharedBudget = (wkMaxSharedBytesPerBlock - 1024 < 99 * 1024) ? wkMaxSharedBytesPerBlock - 1024 : 99 * 1024;
constexpr int kFusedWarps = (wkThreadsPerBlock + 31) / 32;
// Per warp: 32 rows of K neighbour ids, then the 32 seekers' ids (shorts).
constexpr int kWarpTableShorts = 32 * kNumObservedAgents + 32;
constexpr int kTableBytes = TagAlign16(2 * kFusedWarps * kWarpTableShorts);
constexpr int kRowBytes = 4 * kObsDim;
constexpr int kStageRowsFit = (kSharedBudget - kOffTable - kTableBytes) / (kFusedWarps * kRowBytes);
constexpr int kStageRows = kStageRowsFit > 8 ? 8 : (kStageRowsFit < 0 ? 0 : kStageRowsFit);
constexpr bool kStageNeighbours = (wkBlocksPerEnv == 1) && !kUseFullObservation && kStageRows >= 1;
constexpr int kOffStage = kOffTable + kTableBytes;
constexpr int kFusedSharedBytes =
    (wkBlocksPerEnv == 1) ? (kStageNeighbours ? kOffStage + kFusedWarps * kStageRows * kRowBytes : kOffTable) : 0;

static_assert(kFusedSharedBytes + 1024 <= wkMaxSharedBytesPerBlock, "fused kernel shared memory exceeds the device");

// Read by the function manager: dynamic shared memory of each launch of CudaTagContinuousStep.
extern "C" __constant__ int CudaTagContinuousStep_dynamic_shared_bytes = kFusedSharedBytes;

// Read-only view of one env's per-agent state: global memory (phase kernels, InGame = int) or
// shared memory (fused kernel, InGame = signed char). Types are per agent, the same in every env.
template <typename InGame>
struct TagEnvView {
  const float* x;
  const float* y;
  const float* speed;
  const float* acc;
  const float* dir;
  const int* type;
  const InGame* in_game;
};

struct TagAgentState {
  float x, y, speed, acc, dir;
};

__device__ __forceinline__ int TagClampIndex(int value, int count) {
  return value < 0 ? 0 : (value >= count ? count - 1 : value);
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
template <typename View>
__device__ __forceinline__ float TagFeature(int feature, int self, int other, const View& v,
                                           float pos_norm, float max_speed) {
  if (feature == kFeatureAgentType) return static_cast<float>(v.type[other]);
  if (feature == kFeatureStillInTheGame) return static_cast<float>(v.in_game[other]);
  const float* values = feature == kFeatureRelX     ? v.x
                        : feature == kFeatureRelY   ? v.y
                        : feature == kFeatureRelSpeed ? v.speed
                        : feature == kFeatureRelAcceleration ? v.acc
                                                             : v.dir;
  const float scale = feature <= kFeatureRelY ? pos_norm
                      : feature == kFeatureRelDirection ? kTwoPi
                                                        : max_speed;
  return __fdiv_rn(__fsub_rn(values[other], values[self]), scale);
}

// Full observation, element `column` of observer `observer` (compute_observations, full branch).
template <typename View>
__device__ float TagFullObservationValue(int observer, int column, const View& v, float pos_norm,
                                         float max_speed, float time_frac) {
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
template <typename View>
__device__ void TagWriteFullObservationRows(int env, int first_row, int num_rows, const View& v,
                                            float* observations_arr, float pos_norm, float max_speed,
                                            float time_frac) {
  float* out = observations_arr +
               (static_cast<long long>(env) * wkNumberAgents + first_row) * kObsDim;
  const int total = num_rows * kObsDim;
  for (int k = threadIdx.x; k < total; k += blockDim.x) {
    const int r = k / kObsDim;
    out[k] = TagFullObservationValue(first_row + r, k - r * kObsDim, v, pos_norm, max_speed, time_frac);
  }
}

// One observer writes its whole row from its own list (phase kernels, and the fused kernel when
// the neighbour table does not fit in shared memory); zeros when it is out of the game.
template <typename View>
__device__ void TagWriteObservationRow(int observer, const TagNearestList& list, const View& v,
                                       float* obs_row, float pos_norm, float max_speed, float time_frac) {
  const bool self_in_game = v.in_game[observer] != 0;
#pragma unroll
  for (int slot = 0; slot < kNearestListLength; ++slot) {
    const int other = self_in_game ? list.Id(slot) : kNoAgent;
#pragma unroll
    for (int f = 0; f < kNumObsFeatures; ++f) {
      obs_row[f * kNumObservedAgents + slot] =
          other < wkNumberAgents ? TagFeature(f, observer, other, v, pos_norm, max_speed) : 0.0f;
    }
  }
  obs_row[kObsDim - 1] = self_in_game ? time_frac : 0.0f;
}

// The warp of the calling thread writes the observation rows of its seekers (the agents in the game
// whose K nearest its lanes found, `seeker` < 0 for a lane without one) and the all-zero rows of its
// own agents out of the game (agents warp_first .. warp_first + lanes - 1, one block per env). No
// block barrier: a warp writes as soon as its own searches are done, so its stores overlap the
// searches of the other warps. The seekers' ids go to the warp's table (compacted, short ids, -1
// for an empty slot); each lane then computes the 7 features of one (seeker, slot) pair
// (compile-time feature indices) into the warp's staging rows, kStageRows rows at a time, and the
// warp copies each staged row, contiguous in global memory, with consecutive lanes on consecutive
// floats.
template <typename View>
__device__ void TagWriteWarpObservations(int env, int seeker, const TagNearestList& list, bool zero_row,
                                         short* table, float* stage, const View& v,
                                         float* observations_arr, float pos_norm, float max_speed,
                                         float time_frac) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp_first = static_cast<int>(threadIdx.x) - lane;
  const int lanes = min(32, static_cast<int>(blockDim.x) - warp_first);  // the last warp may be partial
  const unsigned mask = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
  short* ids = table + 32 * kNumObservedAgents;  // the warp's seekers, in table-row order
  float* env_rows = observations_arr + static_cast<long long>(env) * wkNumberAgents * kObsDim;
  const unsigned seekers = __ballot_sync(mask, seeker >= 0);
  if (seeker >= 0) {
    const int r = __popc(seekers & ((1u << lane) - 1u));
    ids[r] = static_cast<short>(seeker);
#pragma unroll
    for (int s = 0; s < kNearestListLength; ++s) {
      const int id = list.Id(s);
      table[r * kNumObservedAgents + s] = static_cast<short>(id < wkNumberAgents ? id : -1);
    }
  }
  __syncwarp(mask);
  const int count = __popc(seekers);
  for (int first = 0; first < count; first += kStageRows) {
    const int chunk = min(kStageRows, count - first);
    for (int p = lane; p < chunk * kNumObservedAgents; p += lanes) {
      const int r = p / kNumObservedAgents;
      const int slot = p - r * kNumObservedAgents;
      const int observer = ids[first + r];
      const int other = table[(first + r) * kNumObservedAgents + slot];
      float* staged_row = stage + r * kObsDim;
#pragma unroll
      for (int f = 0; f < kNumObsFeatures; ++f) {
        staged_row[f * kNumObservedAgents + slot] =
            other >= 0 ? TagFeature(f, observer, other, v, pos_norm, max_speed) : 0.0f;
      }
      if (slot == 0) staged_row[kObsDim - 1] = time_frac;
    }
    __syncwarp(mask);
    for (int e = lane; e < chunk * kObsDim; e += lanes) {
      const int r = e / kObsDim;
      env_rows[static_cast<long long>(ids[first + r]) * kObsDim + (e - r * kObsDim)] = stage[e];
    }
    __syncwarp(mask);
  }
  // agents out of the game (never seekers) observe all zeros
  for (unsigned rest = __ballot_sync(mask, zero_row); rest != 0u; rest &= rest - 1u) {
    float* row = env_rows + static_cast<long long>(warp_first + __ffs(rest) - 1) * kObsDim;
    for (int c = lane; c < kObsDim; c += lanes) row[c] = 0.0f;
  }
}

// Mirrors tag_continuous.find_tags for one runner: the nearest tagger strictly closer than the
// margin (squared distances), lowest id on ties; -1 when no tagger is in reach.
template <typename View>
__device__ int TagNearestTaggerInReach(int runner, const View& v, const int* tagger_ids_arr,
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

// End of one env's step (the last lines of TagContinuous.numpy_step): the episode ends at the
// time limit or when no runner is left; it is truncated when the time limit ends it with runners
// still in the game (written every step).
__device__ __forceinline__ void TagEndStep(int env, int t, int episode_length, int runners_left,
                                           int* done_arr, int* truncated_arr) {
  if (t >= episode_length || runners_left == 0) done_arr[env] = 1;
  truncated_arr[env] = (t >= episode_length && runners_left > 0) ? 1 : 0;
}

__device__ __forceinline__ float TagTimeFraction(int t, int episode_length) {
  return __fdiv_rn(static_cast<float>(t), static_cast<float>(episode_length));
}

// ------------------------------------------------------------------------------------------
// Fused kernel: one block per env (wkBlocksPerEnv == 1). The launch bound keeps the register
// count low enough for a block of wkThreadsPerBlock (up to 1024) threads.
extern "C" __global__ void __launch_bounds__(wkThreadsPerBlock) CudaTagContinuousStep(
    float* loc_x_arr, float* loc_y_arr, float* speed_arr, float* direction_arr,
    float* acceleration_arr, int* still_in_the_game_arr, float* edge_hit_reward_penalty_arr,
    int* tag_counts_arr, int* num_runners_arr, const int* agent_types_arr,
    const int* tagger_ids_arr, const float* skill_levels_arr, const float* step_rewards_arr,
    const float* acceleration_actions_arr, const float* turn_actions_arr,
    const int* sampled_actions_arr, float* observations_arr, float* rewards_arr, int* done_arr,
    int* truncated_arr, int* timestep_arr, float grid_length, float max_speed, float edge_hit_penalty,
    float distance_margin_for_reward, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float end_of_game_reward_for_runner, int episode_length) {
  if (wkBlocksPerEnv != 1) return;  // the host launches the phase kernels instead
  extern __shared__ __align__(16) unsigned char tag_shared[];
  float* sh_x = reinterpret_cast<float*>(tag_shared + kOffX);
  float* sh_y = reinterpret_cast<float*>(tag_shared + kOffY);
  float* sh_speed = reinterpret_cast<float*>(tag_shared + kOffSpeed);
  float* sh_acc = reinterpret_cast<float*>(tag_shared + kOffAcc);
  float* sh_dir = reinterpret_cast<float*>(tag_shared + kOffDir);
  float2* sh_slot_xy = reinterpret_cast<float2*>(tag_shared + kOffSlotXY);
  int* sh_cell_start = reinterpret_cast<int*>(tag_shared + kOffCellStart);
  short* sh_slot_code = reinterpret_cast<short*>(tag_shared + kOffSlotCode);
  signed char* sh_in_game = reinterpret_cast<signed char*>(tag_shared + kOffInGame);
  short* sh_table = reinterpret_cast<short*>(tag_shared + kOffTable) + (threadIdx.x >> 5) * kWarpTableShorts;
  float* sh_stage = reinterpret_cast<float*>(tag_shared + kOffStage) + (threadIdx.x >> 5) * (kStageRows * kObsDim);
  __shared__ int sh_scan_scratch[32];
  __shared__ int sh_runners_out;

  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool valid = agent < wkNumberAgents;
  const int base = env * wkNumberAgents;
  const int row = base + agent;
  const bool is_tagger = valid && agent_types_arr[agent] == kTaggerType;

  // Phase 1: move (registers -> global and shared); tag counts cleared; cell counts zeroed.
  if (threadIdx.x == 0) {
    sh_runners_out = 0;
    timestep_arr[env] += 1;
  }
  if (kBuildGrid) {
    for (int c = threadIdx.x; c <= kGridCells; c += blockDim.x) sh_cell_start[c] = 0;
  }
  TagAgentState n = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  bool in_game = false;
  if (valid) {
    n = TagMoveAndWrite(env, agent, loc_x_arr, loc_y_arr, speed_arr, direction_arr, acceleration_arr,
                        still_in_the_game_arr, edge_hit_reward_penalty_arr, skill_levels_arr,
                        step_rewards_arr, acceleration_actions_arr, turn_actions_arr,
                        sampled_actions_arr, rewards_arr, grid_length, max_speed, edge_hit_penalty);
    in_game = still_in_the_game_arr[row] != 0;
    sh_x[agent] = n.x;
    sh_y[agent] = n.y;
    sh_speed[agent] = n.speed;
    sh_acc[agent] = n.acc;
    sh_dir[agent] = n.dir;
    sh_in_game[agent] = in_game ? 1 : 0;
    tag_counts_arr[row] = 0;
  }
  // The grid lists the agents in the game (neighbour search) and every tagger (tag search); its
  // side follows the number listed, so a sparse field still has a few agents per cell.
  const bool listed = valid && (in_game || is_tagger);
  const int listed_total = __syncthreads_count(listed);
  const int side = TagGridSideFor(listed_total);
  const TagGrid grid = {sh_cell_start, sh_slot_xy, sh_slot_code, side,
                        __fdiv_rn(static_cast<float>(side), grid_length), __fmul_rn(kGridSlack, grid_length)};
  if (kBuildGrid) TagGridBuild(listed, agent, in_game, n.x, n.y, grid, sh_scan_scratch);

  // Phase 2: observe (state before tagging), then tag. Each warp takes a contiguous run of grid
  // slots (cell order): its lanes search from neighbouring cells (similar loops, broadcast
  // reads), and the searches of a sparse field still spread over all warps.
  const int t = timestep_arr[env];
  const float time_frac = TagTimeFraction(t, episode_length);
  const float pos_norm = __fmul_rn(grid_length, kSqrt2);
  const TagEnvView<signed char> view = {sh_x, sh_y, sh_speed, sh_acc, sh_dir, agent_types_arr, sh_in_game};
  int seeker = -1;  // agent in the game that this thread searches for
  float seeker_x = 0.0f, seeker_y = 0.0f;
  if (kBuildGrid) {
    // warp w takes slots [w * per_warp, (w + 1) * per_warp); a partial last warp (tail lanes)
    // takes at most tail slots, the full warps more when needed (listed_count <= blockDim.x, so
    // per_warp <= 32)
    const int listed_count = listed_total;
    const int full_warps = static_cast<int>(blockDim.x) >> 5;
    const int tail = static_cast<int>(blockDim.x) & 31;
    const int warps = full_warps + (tail > 0 ? 1 : 0);
    int per_warp = (listed_count + warps - 1) / warps;
    if (tail > 0 && per_warp > tail) per_warp = (listed_count - tail + full_warps - 1) / full_warps;
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int slot = warp * per_warp + lane;
    if (lane < per_warp && slot < listed_count && sh_slot_code[slot] >= 0) {
      seeker = sh_slot_code[slot];
      seeker_x = sh_slot_xy[slot].x;
      seeker_y = sh_slot_xy[slot].y;
    }
  } else if (in_game) {
    seeker = agent;
    seeker_x = n.x;
    seeker_y = n.y;
  }
  if (kUseFullObservation) {
    TagWriteFullObservationRows(env, 0, wkNumberAgents, view, observations_arr, pos_norm, max_speed,
                                time_frac);
  } else {
    TagNearestList list;
    list.Clear();
    if (seeker >= 0) TagKNearestGrid(seeker, seeker_x, seeker_y, grid, list);
    if (kStageNeighbours) {
      TagWriteWarpObservations(env, seeker, list, valid && !in_game, sh_table, sh_stage, view,
                               observations_arr, pos_norm, max_speed, time_frac);
    } else {
      if (seeker >= 0) {
        TagWriteObservationRow(seeker, list, view, observations_arr + static_cast<long long>(base + seeker) * kObsDim,
                               pos_norm, max_speed, time_frac);
      }
      if (valid && !in_game) {  // never a seeker: its row is all zeros
        float* obs_row = observations_arr + static_cast<long long>(row) * kObsDim;
        for (int c = 0; c < kObsDim; ++c) obs_row[c] = 0.0f;
      }
    }
  }
  if (seeker >= 0 && agent_types_arr[seeker] != kTaggerType) {
    const int tagger = kGridSide > 1 ? TagNearestTaggerGrid(seeker_x, seeker_y, grid, agent_types_arr,
                                                            distance_margin_for_reward)
                                     : TagNearestTaggerInReach(seeker, view, tagger_ids_arr, distance_margin_for_reward);
    if (tagger >= 0) {
      atomicAdd(&tag_counts_arr[base + tagger], 1);
      tag_counts_arr[base + seeker] = 1;
      rewards_arr[base + seeker] = __fadd_rn(rewards_arr[base + seeker], tag_penalty_for_runner);
      if (kRunnerExitsGameAfterTagged) atomicAdd(&sh_runners_out, 1);
    }
  }
  __syncthreads();

  // Phase 3: finish. Counts were written by other threads (taggers' by global atomics): read
  // them from L2.
  if (valid) {
    TagFinishAgent(row, is_tagger, __ldcg(&tag_counts_arr[row]), t >= episode_length,
                   still_in_the_game_arr, rewards_arr, tag_reward_for_tagger, end_of_game_reward_for_runner);
  }
  if (threadIdx.x == 0) {
    const int runners_left = num_runners_arr[env] - sh_runners_out;
    num_runners_arr[env] = runners_left;
    TagEndStep(env, t, episode_length, runners_left, done_arr, truncated_arr);
  }
}

// ------------------------------------------------------------------------------------------
// Phase kernels: several blocks per env (wkBlocksPerEnv > 1), launched in this order.

// Phase 1: move every agent, write its step reward, clear its tag count; agent 0 advances time.
extern "C" __global__ void CudaTagContinuousMove(
    float* loc_x_arr, float* loc_y_arr, float* speed_arr, float* direction_arr,
    float* acceleration_arr, const int* still_in_the_game_arr, float* edge_hit_reward_penalty_arr,
    int* tag_counts_arr, const float* skill_levels_arr, const float* step_rewards_arr,
    const float* acceleration_actions_arr, const float* turn_actions_arr,
    const int* sampled_actions_arr, float* rewards_arr, int* timestep_arr, float grid_length,
    float max_speed, float edge_hit_penalty) {
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
    const float* loc_x_arr, const float* loc_y_arr, const float* speed_arr, const float* direction_arr,
    const float* acceleration_arr, const int* still_in_the_game_arr, int* tag_counts_arr,
    int* num_runners_arr, const int* agent_types_arr, const int* tagger_ids_arr,
    float* observations_arr, float* rewards_arr, const int* timestep_arr, float grid_length,
    float max_speed, float distance_margin_for_reward, float tag_penalty_for_runner,
    int episode_length) {
  const int env = wkEnvId();
  if (env >= wkNumberEnvs) return;
  const int agent = wkAgentId();
  const bool valid = agent < wkNumberAgents;
  const int base = env * wkNumberAgents;
  const int row = base + agent;
  const TagEnvView<int> view = {loc_x_arr + base, loc_y_arr + base, speed_arr + base,
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
    TagNearestList list;
    list.Clear();
    if (view.in_game[agent] != 0) TagKNearestScan(agent, view, list);
    TagWriteObservationRow(agent, list, view, observations_arr + static_cast<long long>(row) * kObsDim,
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
    int* still_in_the_game_arr, const int* tag_counts_arr, const int* num_runners_arr,
    const int* agent_types_arr, float* rewards_arr, int* done_arr, int* truncated_arr,
    const int* timestep_arr, float tag_reward_for_tagger, float end_of_game_reward_for_runner,
    int episode_length) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (env >= wkNumberEnvs || agent >= wkNumberAgents) return;
  const int row = env * wkNumberAgents + agent;
  const int t = timestep_arr[env];
  TagFinishAgent(row, agent_types_arr[agent] == kTaggerType, tag_counts_arr[row],
                 t >= episode_length, still_in_the_game_arr, rewards_arr, tag_reward_for_tagger,
                 end_of_game_reward_for_runner);
  if (agent == 0) TagEndStep(env, t, episode_length, num_runners_arr[env], done_arr, truncated_arr);
}

// ------------------------------------------------------------------------------------------
// Start-state hook (fresh_start_states), called by every thread of env start.env's reset block
// after the saved copies are restored. Mirrors tag_continuous.py: TagContinuous.numpy_start_state:
// agent a at x, y uniform in [0, L) (words 0, 1 of slot a) and heading kStartDirections[floor(u * 4)]
// (word 2), each where no starting value was given; then every observation at t = 0 by a
// brute-force K-nearest scan (once per episode).
__device__ void TagContinuousStartState(WkStartKey start, float* loc_x_arr, float* loc_y_arr,
                                        const float* speed_arr, float* direction_arr,
                                        const float* acceleration_arr,
                                        const int* still_in_the_game_arr, const int* agent_types_arr,
                                        float* observations_arr, float grid_length, float max_speed) {
  const int env = static_cast<int>(start.env);
  const long long base = static_cast<long long>(env) * wkNumberAgents;
  constexpr unsigned int kNumStartDirections = sizeof(kStartDirections) / sizeof(kStartDirections[0]);
  for (int a = threadIdx.x; a < wkNumberAgents; a += blockDim.x) {
    const uint4 w = wkStartWords(start, static_cast<unsigned int>(a));
    if (kDrawStartX) loc_x_arr[base + a] = wkStartUniform(w.x, 0.0f, grid_length);
    if (kDrawStartY) loc_y_arr[base + a] = wkStartUniform(w.y, 0.0f, grid_length);
    if (kDrawStartDirection) direction_arr[base + a] = kStartDirections[wkScaleBitsToRange(w.z, kNumStartDirections)];
  }
  __syncthreads();  // every agent's start is written before any observation reads it
  const TagEnvView<int> view = {loc_x_arr + base, loc_y_arr + base, speed_arr + base,
                                acceleration_arr + base, direction_arr + base, agent_types_arr,
                                still_in_the_game_arr + base};
  const float pos_norm = __fmul_rn(grid_length, kSqrt2);
  if (kUseFullObservation) {
    TagWriteFullObservationRows(env, 0, wkNumberAgents, view, observations_arr, pos_norm, max_speed, 0.0f);
  } else {
    for (int a = threadIdx.x; a < wkNumberAgents; a += blockDim.x) {
      TagNearestList list;
      list.Clear();
      if (view.in_game[a] != 0) TagKNearestScan(a, view, list);
      TagWriteObservationRow(a, list, view, observations_arr + (base + a) * kObsDim, pos_norm, max_speed, 0.0f);
    }
  }
}
