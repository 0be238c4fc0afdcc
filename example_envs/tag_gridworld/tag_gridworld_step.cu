// Tag (grid world) step kernels. Specification: example_envs/tag_gridworld/tag_gridworld.py
// (TagGridWorld.numpy_step); the device helpers they share, each naming what it mirrors, are in
// tag_gridworld_device.cuh.
//
//   * wkBlocksPerEnv == 1: CudaTagGridWorldStep (fused; shared-memory positions and a shared
//     atomic tag counter, phases separated by __syncthreads()).
//   * wkBlocksPerEnv > 1: CudaTagGridWorldMove, CudaTagGridWorldTag, CudaTagGridWorldFinish in
//     this order (kernel boundaries are the barriers; the counter is num_taggers_on_runner[env]).
// The fused kernel takes TagGridWorld.step_kernel_args; each phase kernel takes only the arguments
// it uses (TagGridWorld.phase_kernels), in the same relative order.

#include "tag_gridworld_device.cuh"

constexpr int kGridSharedAgents = (wkBlocksPerEnv == 1) ? wkNumberAgents : 1;

// ------------------------------------------------------------------------------------------
extern "C" __global__ void CudaTagGridWorldStep(
    int* loc_x_arr, int* loc_y_arr, int* num_taggers_on_runner_arr, const int* sampled_actions_arr,
    float* observations_arr, float* rewards_arr, int* done_arr, int* truncated_arr, int* timestep_arr,
    float wall_hit_penalty, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float step_cost_for_tagger, int world_boundary, int episode_length) {
  if (wkBlocksPerEnv != 1) return;  // the host launches the phase kernels instead
  __shared__ int sh_x[kGridSharedAgents];
  __shared__ int sh_y[kGridSharedAgents];
  __shared__ int sh_on_runner;
  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool valid = agent < wkNumberAgents;
  const int row = env * wkNumberAgents + agent;

  if (threadIdx.x == 0) {
    sh_on_runner = 0;
    timestep_arr[env] += 1;
  }
  bool hit = false;
  if (valid) {
    int x = loc_x_arr[row];
    int y = loc_y_arr[row];
    hit = GridMoveAgent(sampled_actions_arr[row], world_boundary, &x, &y);
    loc_x_arr[row] = x;
    loc_y_arr[row] = y;
    sh_x[agent] = x;
    sh_y[agent] = y;
  }
  __syncthreads();
  if (valid && agent != kRunnerId && sh_x[agent] == sh_x[kRunnerId] && sh_y[agent] == sh_y[kRunnerId]) {
    atomicAdd(&sh_on_runner, 1);
  }
  __syncthreads();
  const int t = timestep_arr[env];
  const bool tagged = sh_on_runner > 0;
  if (valid) {
    rewards_arr[row] = GridReward(agent == kRunnerId, tagged, hit ? -wall_hit_penalty : 0.0f,
                                  tag_reward_for_tagger, tag_penalty_for_runner, step_cost_for_tagger);
  }
  GridWriteObservations(env, agent, sh_x, sh_y, world_boundary, GridTimeFraction(t, episode_length),
                        observations_arr);
  if (threadIdx.x == 0) {
    num_taggers_on_runner_arr[env] = sh_on_runner;
    GridEndStep(env, t, episode_length, tagged, done_arr, truncated_arr);
  }
}

// ------------------------------------------------------------------------------------------
// Phase 1: move; the wall part of the reward is parked in rewards_arr until phase 3.
extern "C" __global__ void CudaTagGridWorldMove(
    int* loc_x_arr, int* loc_y_arr, int* num_taggers_on_runner_arr, const int* sampled_actions_arr,
    float* rewards_arr, int* timestep_arr, float wall_hit_penalty, int world_boundary) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (env >= wkNumberEnvs || agent >= wkNumberAgents) return;
  const int row = env * wkNumberAgents + agent;
  int x = loc_x_arr[row];
  int y = loc_y_arr[row];
  const bool hit = GridMoveAgent(sampled_actions_arr[row], world_boundary, &x, &y);
  loc_x_arr[row] = x;
  loc_y_arr[row] = y;
  rewards_arr[row] = hit ? -wall_hit_penalty : 0.0f;
  if (agent == 0) {
    timestep_arr[env] += 1;
    num_taggers_on_runner_arr[env] = 0;
  }
}

// Phase 2: every tagger on the runner's cell adds 1 to the env's counter.
extern "C" __global__ void CudaTagGridWorldTag(
    const int* loc_x_arr, const int* loc_y_arr, int* num_taggers_on_runner_arr) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (env >= wkNumberEnvs || agent >= kRunnerId) return;
  const int base = env * wkNumberAgents;
  if (loc_x_arr[base + agent] == loc_x_arr[base + kRunnerId] &&
      loc_y_arr[base + agent] == loc_y_arr[base + kRunnerId]) {
    atomicAdd(&num_taggers_on_runner_arr[env], 1);
  }
}

// Phase 3: rewards, observations, done.
extern "C" __global__ void CudaTagGridWorldFinish(
    const int* loc_x_arr, const int* loc_y_arr, const int* num_taggers_on_runner_arr,
    float* observations_arr, float* rewards_arr, int* done_arr, int* truncated_arr,
    const int* timestep_arr, float tag_reward_for_tagger, float tag_penalty_for_runner,
    float step_cost_for_tagger, int world_boundary, int episode_length) {
  const int env = wkEnvId();
  if (env >= wkNumberEnvs) return;
  const int agent = wkAgentId();
  const int base = env * wkNumberAgents;
  const int t = timestep_arr[env];
  const bool tagged = num_taggers_on_runner_arr[env] > 0;
  if (agent < wkNumberAgents) {
    rewards_arr[base + agent] = GridReward(agent == kRunnerId, tagged, rewards_arr[base + agent],
                                           tag_reward_for_tagger, tag_penalty_for_runner,
                                           step_cost_for_tagger);
  }
  GridWriteObservations(env, agent, loc_x_arr + base, loc_y_arr + base, world_boundary,
                        GridTimeFraction(t, episode_length), observations_arr);
  if (agent == 0) GridEndStep(env, t, episode_length, tagged, done_arr, truncated_arr);
}

// ------------------------------------------------------------------------------------------
// Start-state hook (fresh_start_states), called by every thread of env start.env's reset block.
// Mirrors tag_gridworld.py: TagGridWorld.numpy_start_state: agent a on cell (x, y), x and y
// uniform in [0, L] from words 0 and 1 of slot a; observations at t = 0.
__device__ void TagGridWorldStartState(WkStartKey start, int* loc_x_arr, int* loc_y_arr,
                                       float* observations_arr, int world_boundary) {
  const int env = static_cast<int>(start.env);
  int* x = loc_x_arr + static_cast<long long>(env) * wkNumberAgents;
  int* y = loc_y_arr + static_cast<long long>(env) * wkNumberAgents;
  const unsigned int cells = static_cast<unsigned int>(world_boundary) + 1u;
  for (int a = threadIdx.x; a < wkNumberAgents; a += blockDim.x) {
    const uint4 w = wkStartWords(start, static_cast<unsigned int>(a));
    x[a] = static_cast<int>(wkScaleBitsToRange(w.x, cells));
    y[a] = static_cast<int>(wkScaleBitsToRange(w.y, cells));
  }
  __syncthreads();  // every agent's cell is written before any observation reads it
  // observations at t = 0: time fraction 0
  if (kUseFullObservation) {
    GridWriteFullObservationRows(env, 0, wkNumberAgents, x, y, world_boundary, 0.0f, observations_arr);
  } else {
    for (int a = threadIdx.x; a < wkNumberAgents; a += blockDim.x) {
      GridWritePartialObservation(a, x, y, world_boundary, 0.0f,
                                  observations_arr + (static_cast<long long>(env) * wkNumberAgents + a) * kObsDim);
    }
  }
}
