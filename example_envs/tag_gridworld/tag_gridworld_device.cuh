// Tag (grid world): the device helpers shared by the step kernels (tag_gridworld_step.cu) and
// by the kernel with WarpDrive 2.7.1's parameter list (tag_gridworld_step_271.cu). Specification:
// example_envs/tag_gridworld/tag_gridworld.py (TagGridWorld.numpy_step); each helper names what it
// mirrors.
//
// Prelude constants (TagGridWorld.cuda_constants()): kNumActions, kActionDx[5], kActionDy[5]
// (__device__ constexpr tables), kUseFullObservation, kNumFullObsFeatures, kObsDim, kRunnerType.
// Agents 0..N-2 are taggers, agent N-1 is the runner.
#pragma once

constexpr int kRunnerId = wkNumberAgents - 1;
static_assert(kNumFullObsFeatures == 4, "full observation rows: x, y, type, is-self");
constexpr int kGridPartialObsDim = 6;  // GridWritePartialObservation: own x, y, target x, y, type, time
static_assert(kObsDim == (kUseFullObservation ? 4 * wkNumberAgents + 1 : kGridPartialObsDim), "obs dim");

// The action table as 2.7.1's gridworld kernel read it: (dx, dy) pairs in __constant__ memory.
// It starts out equal to the prelude tables, so nothing needs to fill it; a script written for
// 2.7.1 that copies TagGridWorld.step_actions into it (add_shared_constants +
// initialize_shared_constants) writes the same values.
static_assert(kNumActions == 5, "kIndexToActionArr lists five (dx, dy) pairs");
__constant__ int kIndexToActionArr[2 * kNumActions] = {
    kActionDx[0], kActionDy[0], kActionDx[1], kActionDy[1], kActionDx[2],
    kActionDy[2], kActionDx[3], kActionDy[3], kActionDx[4], kActionDy[4]};

// Mirrors the move of TagGridWorld.numpy_step: returns true on a wall hit (a clipped move).
__device__ bool GridMoveAgent(int action, int boundary, int* x, int* y) {
  const int a = action < 0 ? 0 : (action >= kNumActions ? kNumActions - 1 : action);
  const int nx = *x + kIndexToActionArr[2 * a];
  const int ny = *y + kIndexToActionArr[2 * a + 1];
  *x = nx < 0 ? 0 : (nx > boundary ? boundary : nx);
  *y = ny < 0 ? 0 : (ny > boundary ? boundary : ny);
  return *x != nx || *y != ny;
}

// Mirrors the reward of TagGridWorld.numpy_step: base + (hit ? -wall_hit_penalty : 0).
__device__ __forceinline__ float GridReward(bool is_runner, bool tagged, float wall_part,
                                            float tag_reward_for_tagger, float tag_penalty_for_runner,
                                            float step_cost_for_tagger) {
  const float base = tagged ? (is_runner ? -tag_penalty_for_runner : tag_reward_for_tagger)
                            : (is_runner ? step_cost_for_tagger : -step_cost_for_tagger);
  return __fadd_rn(base, wall_part);
}

__device__ __forceinline__ float GridScaled(int value, int boundary) {
  return __fdiv_rn(static_cast<float>(value), static_cast<float>(boundary));
}

// Full observation element `column` of `observer` (compute_observations, full branch).
__device__ float GridFullObservationValue(int observer, int column, const int* x, const int* y,
                                          int boundary, float time_frac) {
  if (column == kObsDim - 1) return time_frac;
  const int feature = column / wkNumberAgents;
  const int j = column - feature * wkNumberAgents;
  switch (feature) {
    case 0:
      return GridScaled(x[j], boundary);
    case 1:
      return GridScaled(y[j], boundary);
    case 2:
      return j == kRunnerId ? 1.0f : 0.0f;
    default:
      return j == observer ? 1.0f : 0.0f;
  }
}

// Full observations of rows [first_row, first_row + num_rows), written element-parallel.
__device__ void GridWriteFullObservationRows(int env, int first_row, int num_rows, const int* x,
                                             const int* y, int boundary, float time_frac,
                                             float* observations_arr) {
  float* out = observations_arr + (static_cast<long long>(env) * wkNumberAgents + first_row) * kObsDim;
  const int total = num_rows * kObsDim;
  for (int k = threadIdx.x; k < total; k += blockDim.x) {
    const int r = k / kObsDim;
    out[k] = GridFullObservationValue(first_row + r, k - r * kObsDim, x, y, boundary, time_frac);
  }
}

// Partial observation of `agent` (compute_observations, partial branch): own cell, target cell
// (the runner for taggers; the nearest tagger, lowest id on ties, for the runner), type, time.
__device__ void GridWritePartialObservation(int agent, const int* x, const int* y, int boundary,
                                            float time_frac, float* obs_row) {
  int target = kRunnerId;
  if (agent == kRunnerId) {
    int best_d2 = 0x7fffffff;
    for (int j = 0; j < kRunnerId; ++j) {
      const int dx = x[j] - x[kRunnerId];
      const int dy = y[j] - y[kRunnerId];
      const int d2 = dx * dx + dy * dy;
      if (d2 < best_d2) {
        best_d2 = d2;
        target = j;
      }
    }
  }
  obs_row[0] = GridScaled(x[agent], boundary);
  obs_row[1] = GridScaled(y[agent], boundary);
  obs_row[2] = GridScaled(x[target], boundary);
  obs_row[3] = GridScaled(y[target], boundary);
  obs_row[4] = agent == kRunnerId ? 1.0f : 0.0f;
  obs_row[5] = time_frac;
}

// Observations of this block's agents from one env's positions `x`, `y`.
__device__ void GridWriteObservations(int env, int agent, const int* x, const int* y, int boundary,
                                      float time_frac, float* observations_arr) {
  if (kUseFullObservation) {
    const int first_row = (static_cast<int>(blockIdx.x) % wkBlocksPerEnv) * static_cast<int>(blockDim.x);
    const int num_rows = min(static_cast<int>(blockDim.x), wkNumberAgents - first_row);
    if (num_rows > 0) {
      GridWriteFullObservationRows(env, first_row, num_rows, x, y, boundary, time_frac, observations_arr);
    }
  } else if (agent < wkNumberAgents) {
    GridWritePartialObservation(agent, x, y, boundary, time_frac,
                                observations_arr + (static_cast<long long>(env) * wkNumberAgents + agent) * kObsDim);
  }
}

// End of one env's step (the last lines of TagGridWorld.numpy_step): the episode ends with a tag
// or at the time limit; it is truncated when the time limit ends it without a tag (written every
// step).
__device__ __forceinline__ void GridEndStep(int env, int t, int episode_length, bool tagged, int* done_arr,
                                            int* truncated_arr) {
  if (tagged || t >= episode_length) done_arr[env] = 1;
  truncated_arr[env] = (t >= episode_length && !tagged) ? 1 : 0;
}

__device__ __forceinline__ float GridTimeFraction(int t, int episode_length) {
  return __fdiv_rn(static_cast<float>(t), static_cast<float>(episode_length));
}
