// Tag (continuous) step kernels. Specification: example_envs/tag_continuous/tag_continuous.py
// (TagContinuous.numpy_step); each helper names the NumPy function it mirrors.
//
// Compiled after the generated prelude (wkNumberEnvs, wkNumberAgents, wkBlocksPerEnv and the
// constants of TagContinuous.cuda_constants()) and core_service.cuh (wkEnvId, wkAgentId).
//
// Two launch paths, same helpers, same results:
//   * wkBlocksPerEnv == 1: CudaTagContinuousStep, one fused kernel; the moved state is staged in
//     shared memory and the phases are separated by __syncthreads(). With kNeighbourGridSide > 0
//     the K-nearest and tag searches run over a per-step grid of cells (exact, see
//     TagKNearestGrid); when the neighbour table fits in shared memory each warp writes its
//     observation rows with coalesced stores (TagWriteWarpObservations).
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
// Empty slot of a K-nearest list: sorts after every agent id.
constexpr int kNoAgent = 0x7fffffff;

// Neighbour grid (fused kernel only; kNeighbourGridSide == 0 means brute-force scans). Agents in
// the game, and all taggers, are counting-sorted into kGridSide x kGridSide square cells of side
// grid_length / kGridSide every step. The K-nearest search offers the 3 x 3 cells around the
// observer, then the cells within the K-th distance found (TagKNearestGrid); the tag search
// visits the cells within the tag radius. Both compare (squared distance, id) pairs, so the
// result is the brute-force result whatever the order inside a cell (see TagNearestList).
constexpr bool kGridSearch = (wkBlocksPerEnv == 1) && (kNeighbourGridSide > 0);
constexpr int kGridSide = kGridSearch ? kNeighbourGridSide : 1;
constexpr int kGridCells = kGridSide * kGridSide;
static_assert(!kGridSearch || kGridCells <= wkNumberAgents, "one scan element per thread");
static_assert(!kGridSearch || wkNumberAgents <= 32767, "cell-sorted ids are stored as short");
constexpr int kGridAgents = kGridSearch ? wkNumberAgents : 1;
// Relative and absolute slack of the grid's distance bounds: far larger than float rounding of
// the cell arithmetic (about 1e-7 of grid_length), so a ring is never closed too early.
constexpr float kGridSlack = 1e-5f;

// Static shared memory of the fused kernel without the neighbour table (bytes).
constexpr int kFusedSharedBytes = kSharedAgents * (5 * 4 + 1) +
                                  (kGridSearch ? (kGridCells + 1) * 4 + wkNumberAgents * 2 : 0) + 33 * 4;
// The fused kernel stages every observer's K neighbour ids in shared memory when they fit in the
// 48 KiB of static shared memory, so that each warp writes its observation rows coalesced.
constexpr bool kStageNeighbours =
    (wkBlocksPerEnv == 1) && !kUseFullObservation &&
    kFusedSharedBytes + wkNumberAgents * kNumObservedAgents * 2 <= 48 * 1024;
constexpr int kStagedNeighbours = kStageNeighbours ? wkNumberAgents * kNumObservedAgents : 1;

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

__device__ __forceinline__ float TagSquaredDistance(float x0, float y0, float x1, float y1) {
  const float dx = __fsub_rn(x1, x0);
  const float dy = __fsub_rn(y1, y0);
  return __fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy));
}

// Order of candidates: smaller squared distance first, then lower id (NumPy's stable argsort).
__device__ __forceinline__ bool TagCloser(float d2_a, int id_a, float d2_b, int id_b) {
  return d2_a < d2_b || (d2_a == d2_b && id_a < id_b);
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

// ------------------------------------------------------------------------------------------
// K nearest (compute_observations + nearest_agents): the K nearest other agents still in the
// game, as a list sorted by (squared distance, id) kept in registers. A candidate enters when it
// sorts before the current K-th entry; it is placed before the first entry it sorts before and
// the tail shifts down by one. Because the order is total, the final list does not depend on the
// order in which candidates are offered.
struct TagNearestList {
  float d2[kNearestListLength];
  int id[kNearestListLength];

  __device__ __forceinline__ void Clear() {
#pragma unroll
    for (int s = 0; s < kNearestListLength; ++s) {
      d2[s] = INFINITY;
      id[s] = kNoAgent;
    }
  }
  // Squared distance of the K-th entry (INFINITY while the list is not full).
  __device__ __forceinline__ float KthDistance() const { return d2[kNearestListLength - 1]; }

  __device__ __forceinline__ void Offer(float cand_d2, int cand_id) {
    if (!TagCloser(cand_d2, cand_id, d2[kNearestListLength - 1], id[kNearestListLength - 1])) return;
    bool shifting = false;  // once placed, the rest of the list moves down by one
#pragma unroll
    for (int s = 0; s < kNearestListLength; ++s) {
      if (shifting || TagCloser(cand_d2, cand_id, d2[s], id[s])) {
        shifting = true;
        const float d = d2[s];
        const int i = id[s];
        d2[s] = cand_d2;
        id[s] = cand_id;
        cand_d2 = d;
        cand_id = i;
      }
    }
  }
};

// Brute force: every other agent in the game is a candidate.
template <typename View>
__device__ void TagKNearestScan(int observer, const View& v, TagNearestList& list) {
  const float xs = v.x[observer];
  const float ys = v.y[observer];
  for (int j = 0; j < wkNumberAgents; ++j) {
    if (j == observer || v.in_game[j] == 0) continue;
    list.Offer(TagSquaredDistance(xs, ys, v.x[j], v.y[j]), j);
  }
}

// Cell-sorted agents of one env (fused kernel): cell c holds ids[start[c] .. start[c + 1]).
// Cells are numbered row-major (c = gy * kGridSide + gx), so the cells gx0 .. gx1 of one row
// are one contiguous range of ids.
struct TagGrid {
  const int* start;
  const short* ids;
  float inv_cell;  // kGridSide / grid_length
  float slack;     // kGridSlack * grid_length
};

__device__ __forceinline__ int TagGridCoord(float position, float inv_cell) {
  return TagClampIndex(static_cast<int>(floorf(__fmul_rn(position, inv_cell))), kGridSide);
}

// Cell rectangle [x0, x1] x [y0, y1] (inclusive; empty when x0 > x1 or y0 > y1).
struct TagCellRect {
  int x0, x1, y0, y1;
};

// The cells within `reach` of (x, y) along each axis (reach padded by the grid slack).
__device__ __forceinline__ TagCellRect TagCellsWithin(float x, float y, float reach, const TagGrid& g) {
  const float r = __fadd_rn(reach, g.slack);
  return {TagGridCoord(__fsub_rn(x, r), g.inv_cell), TagGridCoord(__fadd_rn(x, r), g.inv_cell),
          TagGridCoord(__fsub_rn(y, r), g.inv_cell), TagGridCoord(__fadd_rn(y, r), g.inv_cell)};
}

// Calls visit(p) for every listed agent p (index into g.ids) of the cells of `area` that are not
// in `skip`. One flat loop: each iteration either moves to the next row or visits one agent, so
// a warp runs about max(rows + agents) iterations over its lanes instead of the sum over cells
// of the per-cell maximum.
template <typename Visit>
__device__ __forceinline__ void TagForEachListed(const TagGrid& g, TagCellRect area, TagCellRect skip,
                                                 Visit visit) {
  int gy = area.y0 - 1;
  int q = 0, len = 0, a_first = 0, a_len = 0, b_first = 0;
  while (true) {
    if (q == len) {  // next row: range A left of the skipped columns (or all), range B right of them
      if (++gy > area.y1) return;
      const int row = gy * kGridSide;
      const bool skip_row = gy >= skip.y0 && gy <= skip.y1 && skip.x0 <= skip.x1;
      const int a_last = skip_row ? min(area.x1, skip.x0 - 1) : area.x1;
      const int b_x0 = skip_row ? max(area.x0, skip.x1 + 1) : area.x1 + 1;
      a_first = g.start[row + area.x0];
      a_len = a_last >= area.x0 ? g.start[row + a_last + 1] - a_first : 0;
      b_first = b_x0 <= area.x1 ? g.start[row + b_x0] : 0;
      const int b_len = b_x0 <= area.x1 ? g.start[row + area.x1 + 1] - b_first : 0;
      q = 0;
      len = a_len + b_len;
      continue;
    }
    visit(q < a_len ? a_first + q : b_first + (q - a_len));
    ++q;
  }
}

// Grid K-nearest, exact, in two passes. Pass 1 offers the 3 x 3 cells around the observer. If
// that found K agents, the K-th squared distance h2 bounds the final one, so every agent that can
// still sort before the final K-th lies within sqrt(h2) along each axis: pass 2 offers the cells
// within that reach, minus the pass-1 cells (nothing is offered twice). Otherwise pass 2 offers
// every other cell. The reach is padded (TagCellsWithin), so float rounding of the cell
// arithmetic never drops an agent.
template <typename View>
__device__ void TagKNearestGrid(int observer, const View& v, const TagGrid& g, TagNearestList& list) {
  const float xs = v.x[observer];
  const float ys = v.y[observer];
  const int cx = TagGridCoord(xs, g.inv_cell);
  const int cy = TagGridCoord(ys, g.inv_cell);
  const TagCellRect near = {max(cx - 1, 0), min(cx + 1, kGridSide - 1), max(cy - 1, 0), min(cy + 1, kGridSide - 1)};
  const TagCellRect none = {1, 0, 1, 0};
  auto offer = [&](int p) {
    const int j = g.ids[p];
    if (j != observer && v.in_game[j] != 0) list.Offer(TagSquaredDistance(xs, ys, v.x[j], v.y[j]), j);
  };
  TagForEachListed(g, near, none, offer);
  const float h2 = list.KthDistance();
  const TagCellRect far = h2 < INFINITY ? TagCellsWithin(xs, ys, __fmul_rn(sqrtf(h2), 1.0f + kGridSlack), g)
                                        : TagCellRect{0, kGridSide - 1, 0, kGridSide - 1};
  TagForEachListed(g, far, near, offer);
}

// Partial observation element `column` of `observer` from its neighbour list `neighbours`
// (agent ids, kNoAgent for an empty slot); zero for an observer out of the game.
template <typename View, typename Ids>
__device__ __forceinline__ float TagPartialObservationValue(int observer, int column, const Ids& neighbours,
                                                            const View& v, float pos_norm,
                                                            float max_speed, float time_frac) {
  if (v.in_game[observer] == 0) return 0.0f;
  if (column == kObsDim - 1) return time_frac;
  const int feature = column / kNumObservedAgents;
  const int other = neighbours[column - feature * kNumObservedAgents];
  return other < wkNumberAgents ? TagFeature(feature, observer, other, v, pos_norm, max_speed) : 0.0f;
}

// One observer writes its whole row (phase kernels, and the fused kernel when the neighbour
// table does not fit in shared memory).
template <typename View>
__device__ void TagWriteObservationRow(int observer, const TagNearestList& list, const View& v,
                                       float* obs_row, float pos_norm, float max_speed, float time_frac) {
#pragma unroll
  for (int slot = 0; slot < kNearestListLength; ++slot) {
    for (int f = 0; f < kNumObsFeatures; ++f) {
      obs_row[f * kNumObservedAgents + slot] = TagPartialObservationValue(
          observer, f * kNumObservedAgents + slot, list.id, v, pos_norm, max_speed, time_frac);
    }
  }
  obs_row[kObsDim - 1] = TagPartialObservationValue(observer, kObsDim - 1, list.id, v, pos_norm,
                                                    max_speed, time_frac);
}

// Neighbour ids of one observer in the shared table (short, -1 for an empty slot).
struct TagStagedIds {
  const short* ids;
  __device__ __forceinline__ int operator[](int slot) const {
    const int id = ids[slot];
    return id < 0 ? kNoAgent : id;
  }
};

// The warp of the calling thread writes the observation rows of its observers (agents
// warp_first .. warp_first + lanes - 1, one block per env) as one contiguous range: lane l
// writes floats l, l + lanes, ... so every store is coalesced. Reads the shared neighbour table.
template <typename View>
__device__ void TagWriteWarpObservations(int env, const short* table, const View& v,
                                         float* observations_arr, float pos_norm, float max_speed,
                                         float time_frac) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp_first = static_cast<int>(threadIdx.x) - lane;
  const int lanes = min(32, static_cast<int>(blockDim.x) - warp_first);  // the last warp may be partial
  const int rows = min(lanes, wkNumberAgents - warp_first);
  float* out = observations_arr +
               (static_cast<long long>(env) * wkNumberAgents + warp_first) * kObsDim;
  for (int e = lane; e < rows * kObsDim; e += lanes) {
    const int r = e / kObsDim;
    const int observer = warp_first + r;
    const TagStagedIds ids = {table + observer * kNumObservedAgents};
    out[e] = TagPartialObservationValue(observer, e - r * kObsDim, ids, v, pos_norm, max_speed, time_frac);
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

// The same search over the grid cells within reach of the runner (taggers are always listed).
template <typename View>
__device__ int TagNearestTaggerInReachGrid(int runner, const View& v, const TagGrid& g, float margin) {
  const float xs = v.x[runner];
  const float ys = v.y[runner];
  int best = -1;
  float best_d2 = __fmul_rn(margin, margin);
  TagForEachListed(g, TagCellsWithin(xs, ys, margin, g), TagCellRect{1, 0, 1, 0}, [&](int p) {
    const int j = g.ids[p];
    if (v.type[j] != kTaggerType) return;
    const float d2 = TagSquaredDistance(xs, ys, v.x[j], v.y[j]);
    if (d2 < best_d2 || (d2 == best_d2 && best >= 0 && j < best)) {
      best_d2 = d2;
      best = j;
    }
  });
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

// Inclusive prefix sum of data[0 .. n) (n <= blockDim.x) by the whole block; every thread of the
// block must call it. warp_totals holds 32 ints of scratch.
__device__ void TagBlockInclusiveScan(int* data, int n, int* warp_totals) {
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int num_warps = (static_cast<int>(blockDim.x) + 31) >> 5;
  const int warp_threads = min(32, static_cast<int>(blockDim.x) - (warp << 5));
  const unsigned mask = warp_threads == 32 ? 0xffffffffu : ((1u << warp_threads) - 1u);
  int value = tid < n ? data[tid] : 0;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int up = __shfl_up_sync(mask, value, offset);
    if (lane >= offset) value += up;
  }
  if (lane == warp_threads - 1) warp_totals[warp] = value;
  __syncthreads();
  if (warp == 0) {
    int total = lane < num_warps ? warp_totals[lane] : 0;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const int up = __shfl_up_sync(mask, total, offset);
      if (lane >= offset) total += up;
    }
    if (lane < num_warps) warp_totals[lane] = total;
  }
  __syncthreads();
  if (warp > 0) value += warp_totals[warp - 1];
  if (tid < n) data[tid] = value;
  __syncthreads();
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
    int* timestep_arr, float grid_length, float max_speed, float edge_hit_penalty,
    float distance_margin_for_reward, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float end_of_game_reward_for_runner, int episode_length) {
  if (wkBlocksPerEnv != 1) return;  // the host launches the phase kernels instead
  __shared__ float sh_x[kSharedAgents];
  __shared__ float sh_y[kSharedAgents];
  __shared__ float sh_speed[kSharedAgents];
  __shared__ float sh_acc[kSharedAgents];
  __shared__ float sh_dir[kSharedAgents];
  __shared__ signed char sh_in_game[kSharedAgents];
  __shared__ int sh_cell_start[kGridCells + 1];  // counts, then (after the scan) cell starts
  __shared__ short sh_grid_ids[kGridAgents];
  __shared__ short sh_neighbours[kStagedNeighbours];
  __shared__ int sh_scan_scratch[32];
  __shared__ int sh_runners_out;

  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool valid = agent < wkNumberAgents;
  const int row = env * wkNumberAgents + agent;
  const bool is_tagger = valid && agent_types_arr[agent] == kTaggerType;

  // Phase 1: move (registers -> global and shared); tag counts cleared.
  if (threadIdx.x == 0) {
    sh_runners_out = 0;
    timestep_arr[env] += 1;
  }
  if (kGridSearch) {
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
  __syncthreads();

  // Grid: count agents per cell, prefix-sum the counts into cell starts, scatter the ids.
  const float inv_cell = __fdiv_rn(static_cast<float>(kGridSide), grid_length);
  const TagGrid grid = {sh_cell_start, sh_grid_ids, inv_cell, __fmul_rn(kGridSlack, grid_length)};
  // Listed in the grid: agents in the game (neighbour search) and every tagger (tag search).
  const bool listed = valid && (in_game || is_tagger);
  if (kGridSearch) {
    const int cell = TagGridCoord(n.y, inv_cell) * kGridSide + TagGridCoord(n.x, inv_cell);
    const int slot = listed ? atomicAdd(&sh_cell_start[cell + 1], 1) : 0;
    __syncthreads();
    TagBlockInclusiveScan(sh_cell_start + 1, kGridCells, sh_scan_scratch);
    if (listed) sh_grid_ids[sh_cell_start[cell] + slot] = static_cast<short>(agent);
    __syncthreads();
  }

  // Phase 2: observe (state before tagging), then tag. With the grid, thread k searches for the
  // k-th agent in cell order (the "seeker"), so the lanes of a warp search from neighbouring
  // cells: similar loops, and shared reads of the same candidates broadcast instead of
  // conflicting. Without it, every thread searches for its own agent.
  const int t = timestep_arr[env];
  const float time_frac = TagTimeFraction(t, episode_length);
  const float pos_norm = __fmul_rn(grid_length, kSqrt2);
  const TagEnvView<signed char> view = {sh_x, sh_y, sh_speed, sh_acc, sh_dir, agent_types_arr, sh_in_game};
  const int listed_count = kGridSearch ? sh_cell_start[kGridCells] : 0;
  const int seeker = kGridSearch ? (static_cast<int>(threadIdx.x) < listed_count ? sh_grid_ids[threadIdx.x] : -1)
                                 : (valid ? agent : -1);
  const bool seeker_in_game = seeker >= 0 && sh_in_game[seeker] != 0;
  if (kUseFullObservation) {
    TagWriteFullObservationRows(env, 0, wkNumberAgents, view, observations_arr, pos_norm, max_speed,
                                time_frac);
  } else {
    TagNearestList list;
    list.Clear();
    if (seeker_in_game) {
      if (kGridSearch) {
        TagKNearestGrid(seeker, view, grid, list);
      } else {
        TagKNearestScan(seeker, view, list);
      }
    }
    if (kStageNeighbours) {
      if (seeker >= 0) {
#pragma unroll
        for (int s = 0; s < kNearestListLength; ++s) {
          sh_neighbours[seeker * kNumObservedAgents + s] =
              static_cast<short>(list.id[s] < wkNumberAgents ? list.id[s] : -1);
        }
      }
      // rows of agents out of the game are all zeros (the writer never reads their table rows)
      if (kGridSearch) {
        __syncthreads();  // the table rows of a warp's agents were filled by other warps
      } else {
        __syncwarp();
      }
      TagWriteWarpObservations(env, sh_neighbours, view, observations_arr, pos_norm, max_speed, time_frac);
    } else {
      if (seeker >= 0) {
        TagWriteObservationRow(seeker, list, view,
                               observations_arr + (static_cast<long long>(env) * wkNumberAgents + seeker) * kObsDim,
                               pos_norm, max_speed, time_frac);
      }
      if (kGridSearch && valid && !listed) {  // out of the game and not a seeker: all zeros
        float* obs_row = observations_arr + static_cast<long long>(row) * kObsDim;
        for (int c = 0; c < kObsDim; ++c) obs_row[c] = 0.0f;
      }
    }
  }
  if (seeker_in_game && agent_types_arr[seeker] != kTaggerType) {
    const int tagger = kGridSearch
                           ? TagNearestTaggerInReachGrid(seeker, view, grid, distance_margin_for_reward)
                           : TagNearestTaggerInReach(seeker, view, tagger_ids_arr, distance_margin_for_reward);
    if (tagger >= 0) {
      const int seeker_row = env * wkNumberAgents + seeker;
      atomicAdd(&tag_counts_arr[env * wkNumberAgents + tagger], 1);
      tag_counts_arr[seeker_row] = 1;
      rewards_arr[seeker_row] = __fadd_rn(rewards_arr[seeker_row], tag_penalty_for_runner);
      if (kRunnerExitsGameAfterTagged) atomicAdd(&sh_runners_out, 1);
    }
  }
  __syncthreads();

  // Phase 3: finish. Counts were written by other threads (taggers' by global atomics): read them
  // from L2.
  if (valid) {
    TagFinishAgent(row, is_tagger, __ldcg(&tag_counts_arr[row]), t >= episode_length,
                   still_in_the_game_arr, rewards_arr, tag_reward_for_tagger, end_of_game_reward_for_runner);
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
