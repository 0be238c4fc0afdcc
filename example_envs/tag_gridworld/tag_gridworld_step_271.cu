// CudaTagGridWorldStep with WarpDrive 2.7.1's parameter list, for the self-contained test builds
// (warp_drive/cuda_includes/test_build*.cu) whose kernels 2.7.1's unit tests launch directly:
//
//   (loc_x, loc_y, actions, done, rewards, observations, wall_hit_penalty, tag_reward_for_tagger,
//    tag_penalty_for_runner, step_cost_for_tagger, use_full_observation, world_boundary,
//    timestep, episode_length)
//
// The step is the one of tag_gridworld_step.cu, from the same device helpers (so the same numbers
// as TagGridWorld.numpy_step). What differs:
//   * the observation layout is chosen at run time (use_full_observation), as 2.7.1 did: full rows
//     are kObsDim = 4 N + 1 wide, so the unit is built with kUseFullObservation = true; the
//     partial layout writes 6 values per agent;
//   * no _truncated_ and no tag-counter argument: the counter is a __device__ array of the module;
//   * one kernel for one or several blocks per env: its phases are separated by
//     __sync_env_threads() (compat_271.cuh), so with several blocks per env the host only launches
//     it on a grid whose blocks are all resident at once.
// Envs of this package launch the kernels of tag_gridworld_step.cu (TagGridWorld.step_kernel_args);
// a translation unit includes either that file or this one (both define CudaTagGridWorldStep).

#include "tag_gridworld_device.cuh"

static_assert(kUseFullObservation,
              "2.7.1's kernel picks the observation layout at run time: build it with "
              "kUseFullObservation = true and kObsDim = 4 * wkNumberAgents + 1");

// Taggers on the runner's cell, per env, for the step in flight.
__device__ int wkGridTaggersOnRunner271[wkNumberEnvs];

extern "C" __global__ void CudaTagGridWorldStep(
    int* loc_x_arr, int* loc_y_arr, const int* actions_arr, int* done_arr, float* rewards_arr,
    float* observations_arr, float wall_hit_penalty, float tag_reward_for_tagger,
    float tag_penalty_for_runner, float step_cost_for_tagger, bool use_full_observation,
    int world_boundary, int* timestep_arr, int episode_length) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool in_env = env < wkNumberEnvs;
  const bool valid = in_env && agent < wkNumberAgents;
  const bool leader = in_env && threadIdx.x == 0 && static_cast<int>(blockIdx.x) % wkBlocksPerEnv == 0;
  const long long base = static_cast<long long>(env) * wkNumberAgents;

  // Phase 1: the clock, the counter and every agent's move.
  if (leader) {
    timestep_arr[env] += 1;
    wkGridTaggersOnRunner271[env] = 0;
  }
  bool hit = false;
  if (valid) {
    int x = loc_x_arr[base + agent];
    int y = loc_y_arr[base + agent];
    hit = GridMoveAgent(actions_arr[base + agent], world_boundary, &x, &y);
    loc_x_arr[base + agent] = x;
    loc_y_arr[base + agent] = y;
  }
  __sync_env_threads();

  // Phase 2: taggers on the runner's cell.
  if (valid && agent != kRunnerId && loc_x_arr[base + agent] == loc_x_arr[base + kRunnerId] &&
      loc_y_arr[base + agent] == loc_y_arr[base + kRunnerId]) {
    atomicAdd(&wkGridTaggersOnRunner271[env], 1);
  }
  __sync_env_threads();

  // Phase 3: rewards, observations, done.
  if (!in_env) return;
  const int t = timestep_arr[env];
  const bool tagged = wkGridTaggersOnRunner271[env] > 0;
  const float time_frac = GridTimeFraction(t, episode_length);
  if (valid) {
    rewards_arr[base + agent] = GridReward(agent == kRunnerId, tagged, hit ? -wall_hit_penalty : 0.0f,
                                           tag_reward_for_tagger, tag_penalty_for_runner,
                                           step_cost_for_tagger);
  }
  if (use_full_observation) {
    GridWriteObservations(env, agent, loc_x_arr + base, loc_y_arr + base, world_boundary, time_frac,
                          observations_arr);
  } else if (valid) {
    GridWritePartialObservation(agent, loc_x_arr + base, loc_y_arr + base, world_boundary, time_frac,
                                observations_arr + (base + agent) * kGridPartialObsDim);
  }
  if (leader && (tagged || t >= episode_length)) done_arr[env] = 1;
}
