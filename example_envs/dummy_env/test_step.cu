// testkernel: the dummy step of WarpDrive 2.7.1's tutorials and tests (reset and log), written
// with 2.7.1's kernel-side helpers (getEnvID, getAgentID, __sync_env_threads) so that it also
// exercises them. Built by warp_drive/cuda_includes/test_build*.cu (E=2, N=5).
//
// Per agent (env e, agent a): x /= multiplier; y *= multiplier (int result, truncated);
// actions[e, a, i] = i for the 3 action slots. Env e is done (done[e] = 1) when
// step == episode_length or when any of its agents has y >= target after the update.
//
// Every thread reaches the barriers: work is guarded, the barriers are not.

constexpr int kTestActionSlots = 3;

extern "C" __global__ void testkernel(float* x, int* y, int* done, int* actions, float multiplier,
                                      int target, int step, int episode_length) {
  __shared__ int agents_at_target;  // agents of this block with y >= target
  const int env = getEnvID(blockIdx.x);
  const int agent = getAgentID(threadIdx.x, blockIdx.x, blockDim.x);
  if (threadIdx.x == 0) agents_at_target = 0;
  __syncthreads();

  if (env < wkNumberEnvs && agent < wkNumberAgents) {
    const int row = env * wkNumberAgents + agent;
    x[row] = x[row] / multiplier;
    const int y_new = static_cast<int>(static_cast<float>(y[row]) * multiplier);
    y[row] = y_new;
    if (y_new >= target) atomicAdd(&agents_at_target, 1);
    for (int i = 0; i < kTestActionSlots; ++i) actions[row * kTestActionSlots + i] = i;
  }

  __sync_env_threads();  // the block's count is complete (and, with several blocks, every block's writes)

  if (threadIdx.x == 0 && env < wkNumberEnvs && (step == episode_length || agents_at_target > 0)) {
    atomicMax(&done[env], 1);
  }
}
