// Step kernel of the LegacyCrowd test env, written against WarpDrive 2.7.1's kernel-side API:
// getEnvID / getAgentID, __sync_env_threads, wkNumberAgents / wkNumberEnvs, an extern "C" block,
// and scalar arguments passed by value (including the meta values n_agents and episode_length).
//
// Each agent moves on an L x L grid, then (after every agent of the env has moved, possibly in
// another block: hence the env-wide barrier) counts the other agents on its cell and observes
// the crowd's mean position. NumPy twin: crowd_step in legacy_crowd.py.

extern "C" {
  __global__ void CudaLegacyCrowdStep(
      int* loc_x_arr,
      int* loc_y_arr,
      const int* actions_arr,
      float* obs_arr,
      float* rewards_arr,
      int* done_arr,
      int* timestep_arr,
      const int grid_length,
      const float crowd_penalty,
      const float goal_reward,
      const int n_agents,
      const int episode_length) {
    const int kEnvId = getEnvID(blockIdx.x);
    const int kThisAgentId = getAgentID(threadIdx.x, blockIdx.x, blockDim.x);
    const bool kActive = kEnvId < wkNumberEnvs && kThisAgentId < wkNumberAgents;
    const int kRow = kEnvId * wkNumberAgents;

    // 1. Move (clipped to the grid); agent 0 advances the env's clock.
    if (kActive) {
      if (kThisAgentId == 0) {
        timestep_arr[kEnvId] += 1;
      }
      const int action = actions_arr[kRow + kThisAgentId];
      int x = loc_x_arr[kRow + kThisAgentId];
      int y = loc_y_arr[kRow + kThisAgentId];
      if (action == 1) x += 1;
      if (action == 2) x -= 1;
      if (action == 3) y += 1;
      if (action == 4) y -= 1;
      x = min(max(x, 0), grid_length - 1);
      y = min(max(y, 0), grid_length - 1);
      loc_x_arr[kRow + kThisAgentId] = x;
      loc_y_arr[kRow + kThisAgentId] = y;
    }

    // Every thread of every block of the env waits here (outside the agent guard).
    __sync_env_threads();

    // 2. Crowd, reward and observation from everyone's new position.
    if (kActive) {
      const int t = timestep_arr[kEnvId];
      const int x = loc_x_arr[kRow + kThisAgentId];
      const int y = loc_y_arr[kRow + kThisAgentId];
      int sum_x = 0;
      int sum_y = 0;
      int crowd = 0;
      for (int j = 0; j < n_agents; j++) {
        const int xj = loc_x_arr[kRow + j];
        const int yj = loc_y_arr[kRow + j];
        sum_x += xj;
        sum_y += yj;
        if (j != kThisAgentId && xj == x && yj == y) crowd += 1;
      }
      const int goal = grid_length / 2;
      const float at_goal = (x == goal && y == goal) ? goal_reward : 0.0f;
      rewards_arr[kRow + kThisAgentId] =
          __fsub_rn(at_goal, __fmul_rn(crowd_penalty, static_cast<float>(crowd)));

      const float length = static_cast<float>(grid_length);
      const float agents_times_length = static_cast<float>(n_agents * grid_length);
      float* obs = obs_arr + (kRow + kThisAgentId) * 6;
      obs[0] = __fdiv_rn(static_cast<float>(x), length);
      obs[1] = __fdiv_rn(static_cast<float>(y), length);
      obs[2] = __fdiv_rn(static_cast<float>(sum_x), agents_times_length);
      obs[3] = __fdiv_rn(static_cast<float>(sum_y), agents_times_length);
      obs[4] = __fdiv_rn(static_cast<float>(crowd), static_cast<float>(n_agents));
      obs[5] = __fdiv_rn(static_cast<float>(t), static_cast<float>(episode_length));
      if (kThisAgentId == 0 && t >= episode_length) {
        done_arr[kEnvId] = 1;
      }
    }
  }
}
