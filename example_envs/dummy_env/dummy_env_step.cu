// DummyEnv step. Specification: example_envs/dummy_env/dummy_env.py (DummyEnv.numpy_step).
// One thread per agent, any number of blocks per env: no barrier is needed because the done flag
// is raised with atomicMax and only agent 0 touches the env's timestep.

extern "C" __global__ void CudaDummyEnvStep(float* x_arr, float* y_arr,
                                            const int* sampled_actions_arr,
                                            float* observations_arr, float* rewards_arr,
                                            int* done_arr, int* timestep_arr, float multiplier,
                                            float target, int episode_length) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (env >= wkNumberEnvs || agent >= wkNumberAgents) return;
  const int row = env * wkNumberAgents + agent;
  float x = x_arr[row];
  float y = y_arr[row];
  if (sampled_actions_arr[row] == kUpdateAction) {
    x = __fdiv_rn(x, multiplier);
    y = __fmul_rn(y, multiplier);
  }
  x_arr[row] = x;
  y_arr[row] = y;
  observations_arr[row * kObsDim + 0] = x;
  observations_arr[row * kObsDim + 1] = y;
  rewards_arr[row] = __fdiv_rn(y, target);
  if (y >= target) atomicMax(&done_arr[env], 1);
  if (agent == 0) {
    const int t = timestep_arr[env] + 1;
    timestep_arr[env] = t;
    if (t >= episode_length) atomicMax(&done_arr[env], 1);
  }
}
