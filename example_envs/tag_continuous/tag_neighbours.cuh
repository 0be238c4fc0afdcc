// Tag (continuous): neighbour searches of the step kernels. Included by tag_continuous_step.cu
// after the prelude (kNumObservedAgents, kUseFullObservation, kNeighbourGridSide, ...).
//
// The K nearest agents (nearest_agents in tag_continuous.py) and the nearest tagger in reach
// (find_tags) are defined on (squared distance, id) pairs: smaller distance first, lower id on
// ties. Every search here compares whole pairs, so its result does not depend on the order in
// which candidates are visited, and any search that visits a superset of the agents that can
// matter returns the brute-force result exactly.
//
// The fused kernel sorts the agents of its env into a grid of square cells every step
// (TagGridBuild) and searches cells near the observer (TagKNearestGrid, TagNearestTaggerGrid).
// The side of the grid is chosen each step from the number of agents listed (about
// kGridAgentsPerCell per cell, at most kGridSide); a side of 1 is the brute-force scan.
#pragma once

#ifndef TAG_NEIGHBOURS_CUH_
#define TAG_NEIGHBOURS_CUH_

// Local K-nearest list length (1 when the full observation is used).
constexpr int kNearestListLength = kUseFullObservation ? 1 : kNumObservedAgents;
// Empty slot of a K-nearest list: sorts after every agent id.
constexpr int kNoAgent = 0x7fffffff;

// Largest side of the grid (the shared cell array holds kGridCells + 1 ints).
constexpr int kGridSide = kNeighbourGridSide > 1 ? kNeighbourGridSide : 1;
constexpr int kGridCells = kGridSide * kGridSide;
// Candidates read per step of a range scan: independent shared loads in flight per thread.
constexpr int kCandidateBatch = 4;
// Relative and absolute (times grid_length) slack of every reach: far larger than the float
// rounding of the cell arithmetic (about 1e-7 of grid_length), so no agent that can matter is
// ever outside the cells searched.
constexpr float kGridSlack = 1e-5f;

__device__ __forceinline__ float TagSquaredDistance(float x0, float y0, float x1, float y1) {
  const float dx = __fsub_rn(x1, x0);
  const float dy = __fsub_rn(y1, y0);
  return __fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy));
}

// The K nearest so far, sorted by (squared distance, id), in registers. Each entry is one 64-bit
// key: the float bits of the squared distance (non-negative, so their unsigned order is the float
// order) above the id, so one unsigned comparison orders two candidates. Empty slots hold ~0,
// which sorts after every candidate.
struct TagNearestList {
  unsigned long long key[kNearestListLength];

  __device__ __forceinline__ void Clear() {
#pragma unroll
    for (int s = 0; s < kNearestListLength; ++s) key[s] = ~0ull;
  }
  // Squared distance of the K-th entry (INFINITY while the list is not full).
  __device__ __forceinline__ float KthDistance() const {
    const unsigned long long last = key[kNearestListLength - 1];
    return last == ~0ull ? INFINITY : __uint_as_float(static_cast<unsigned>(last >> 32));
  }
  // Agent id of slot s (kNoAgent when empty).
  __device__ __forceinline__ int Id(int s) const {
    return key[s] == ~0ull ? kNoAgent : static_cast<int>(key[s] & 0xffffffffull);
  }
  // Inserts the candidate when it sorts before the K-th entry: every slot compares with the
  // candidate independently, then each slot keeps its key, takes the candidate, or takes its
  // predecessor (no serial chain through the list).
  __device__ __forceinline__ void Offer(float cand_d2, int cand_id) {
    const unsigned long long k =
        (static_cast<unsigned long long>(__float_as_uint(cand_d2)) << 32) | static_cast<unsigned>(cand_id);
    if (k >= key[kNearestListLength - 1]) return;
    bool before[kNearestListLength];
#pragma unroll
    for (int s = 0; s < kNearestListLength; ++s) before[s] = k < key[s];
#pragma unroll
    for (int s = kNearestListLength - 1; s > 0; --s) {
      key[s] = before[s] ? (before[s - 1] ? key[s - 1] : k) : key[s];
    }
    key[0] = before[0] ? k : key[0];
  }
};

// Brute force over global-memory state (phase kernels): every other agent in the game.
template <typename View>
__device__ void TagKNearestScan(int observer, const View& v, TagNearestList& list) {
  const float xs = v.x[observer];
  const float ys = v.y[observer];
  for (int j = 0; j < wkNumberAgents; ++j) {
    if (j == observer || v.in_game[j] == 0) continue;
    list.Offer(TagSquaredDistance(xs, ys, v.x[j], v.y[j]), j);
  }
}

// ------------------------------------------------------------------------------------------
// The grid: side x side cells. Listed agents (in the game, or taggers) sit in cell order: the
// agents of cell c are slots start[c] .. start[c + 1] - 1 of xy (position) and code (agent id,
// or ~id for an agent out of the game). Cells are numbered row-major (c = gy * side + gx), so the
// cells gx0 .. gx1 of one row are one contiguous slot range.
struct TagGrid {
  int* start;
  float2* xy;
  short* code;
  int side;
  float inv_cell;  // side / grid_length
  float slack;     // kGridSlack * grid_length
};

// Side for `listed` agents: about kGridAgentsPerCell agents per cell, between 1 and kGridSide.
__device__ __forceinline__ int TagGridSideFor(int listed) {
  const int side = static_cast<int>(sqrtf(static_cast<float>(listed) / kGridAgentsPerCell));
  return side < 1 ? 1 : (side > kGridSide ? kGridSide : side);
}

__device__ __forceinline__ int TagGridCoord(float position, const TagGrid& g) {
  const int c = static_cast<int>(floorf(__fmul_rn(position, g.inv_cell)));
  return c < 0 ? 0 : (c >= g.side ? g.side - 1 : c);
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

// Counting sort of the listed agents into the cells of g; every thread of the block calls it
// (listed is false for threads without an agent). g.start must hold side * side + 1 zeros on
// entry (and a barrier since); on return it holds the cell starts and every listed agent has its
// slot. Lanes of a warp that share a cell take their slots with one atomic (__match_any_sync).
__device__ void TagGridBuild(bool listed, int agent, bool in_game, float x, float y, const TagGrid& g,
                             int* warp_totals) {
  const int cell = TagGridCoord(y, g) * g.side + TagGridCoord(x, g);
  int slot = 0;
  if (listed) {
    const unsigned peers = __match_any_sync(__activemask(), cell);
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int leader = __ffs(peers) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(&g.start[cell + 1], __popc(peers));
    slot = __shfl_sync(peers, base, leader) + __popc(peers & ((1u << lane) - 1u));
  }
  __syncthreads();
  TagBlockInclusiveScan(g.start + 1, g.side * g.side, warp_totals);
  if (listed) {
    const int k = g.start[cell] + slot;
    g.xy[k] = make_float2(x, y);
    g.code[k] = static_cast<short>(in_game ? agent : ~agent);
  }
  __syncthreads();
}

// Cell rectangle [x0, x1] x [y0, y1] (inclusive; empty when x0 > x1).
struct TagCellRect {
  int x0, x1, y0, y1;
};

constexpr TagCellRect kNoCells = {1, 0, 1, 0};

// The cells within `reach` of (x, y) along each axis (reach padded by the grid slack). A cell
// coordinate is a monotone function of the position, so every agent within reach is inside.
__device__ __forceinline__ TagCellRect TagCellsWithin(float x, float y, float reach, const TagGrid& g) {
  const float r = __fadd_rn(reach, g.slack);
  return {TagGridCoord(__fsub_rn(x, r), g), TagGridCoord(__fadd_rn(x, r), g),
          TagGridCoord(__fsub_rn(y, r), g), TagGridCoord(__fadd_rn(y, r), g)};
}

// Calls visit_range(first, count) for the slots of the cells of `area` outside `skip`: per row
// at most two contiguous ranges (left and right of the skipped columns).
template <typename VisitRange>
__device__ __forceinline__ void TagForEachRange(const TagGrid& g, TagCellRect area, TagCellRect skip,
                                                VisitRange visit_range) {
  for (int gy = area.y0; gy <= area.y1; ++gy) {
    const int row = gy * g.side;
    const bool skip_row = gy >= skip.y0 && gy <= skip.y1 && skip.x0 <= skip.x1;
    const int a_last = skip_row ? min(area.x1, skip.x0 - 1) : area.x1;
    if (a_last >= area.x0) {
      const int first = g.start[row + area.x0];
      visit_range(first, g.start[row + a_last + 1] - first);
    }
    const int b_x0 = skip_row ? max(area.x0, skip.x1 + 1) : area.x1 + 1;
    if (b_x0 <= area.x1) {
      const int first = g.start[row + b_x0];
      visit_range(first, g.start[row + area.x1 + 1] - first);
    }
  }
}

// Offers the agents in the game of slots [first, first + count), except the observer. Reads
// kCandidateBatch slots at a time (the slot arrays are padded by kCandidateBatch entries).
__device__ __forceinline__ void TagOfferRange(const TagGrid& g, int first, int count, int observer,
                                              float xs, float ys, TagNearestList& list) {
  for (int q = 0; q < count; q += kCandidateBatch) {
    float2 xy[kCandidateBatch];
    int code[kCandidateBatch];
#pragma unroll
    for (int i = 0; i < kCandidateBatch; ++i) {
      xy[i] = g.xy[first + q + i];
      code[i] = g.code[first + q + i];
    }
#pragma unroll
    for (int i = 0; i < kCandidateBatch; ++i) {
      if (q + i < count && code[i] >= 0 && code[i] != observer) {
        list.Offer(TagSquaredDistance(xs, ys, xy[i].x, xy[i].y), code[i]);
      }
    }
  }
}

// Grid K-nearest, exact. Squares of cells around the observer's cell grow (radius 1, 3, 7, ...;
// each step offers only the cells not offered yet) until K agents are found or the square covers
// the field. Then the K-th squared distance h2 bounds the final one: every agent that can still
// sort before the final K-th lies within sqrt(h2) along each axis, and the cells within that
// reach, minus the square, are offered last.
__device__ void TagKNearestGrid(int observer, float xs, float ys, const TagGrid& g, TagNearestList& list) {
  const int cx = TagGridCoord(xs, g);
  const int cy = TagGridCoord(ys, g);
  const int last = g.side - 1;
  auto offer = [&](int first, int count) { TagOfferRange(g, first, count, observer, xs, ys, list); };
  TagCellRect done = kNoCells;
  for (int r = 1;; r = 2 * r + 1) {
    const TagCellRect square = {max(cx - r, 0), min(cx + r, last), max(cy - r, 0), min(cy + r, last)};
    TagForEachRange(g, square, done, offer);
    done = square;
    const bool covers = square.x0 == 0 && square.y0 == 0 && square.x1 == last && square.y1 == last;
    if (covers) return;
    if (list.KthDistance() < INFINITY) break;
  }
  const float reach = __fmul_rn(sqrtf(list.KthDistance()), 1.0f + kGridSlack);
  TagForEachRange(g, TagCellsWithin(xs, ys, reach, g), done, offer);
}

// Mirrors find_tags for one runner over the grid cells within the margin: the nearest tagger
// strictly closer than the margin (squared distances), lowest id on ties; -1 when none.
// Taggers are always listed (in the game or not, as find_tags does not look).
__device__ int TagNearestTaggerGrid(float xs, float ys, const TagGrid& g, const int* agent_types_arr,
                                    float margin) {
  int best = -1;
  float best_d2 = __fmul_rn(margin, margin);
  TagForEachRange(g, TagCellsWithin(xs, ys, margin, g), kNoCells, [&](int first, int count) {
    for (int p = first; p < first + count; ++p) {
      const float d2 = TagSquaredDistance(xs, ys, g.xy[p].x, g.xy[p].y);
      if (d2 > best_d2 || (d2 == best_d2 && best < 0)) continue;
      const int code = g.code[p];
      const int j = code >= 0 ? code : ~code;
      if (agent_types_arr[j] != kTaggerType || (d2 == best_d2 && j > best)) continue;
      best_d2 = d2;
      best = j;
    }
  });
  return best;
}

#endif  // TAG_NEIGHBOURS_CUH_
