// Env / agent index mapping for env step kernels (docs/architecture.md).
//
// Grid layout: wkNumberEnvs * wkBlocksPerEnv blocks; the blocks of env e are
// e * wkBlocksPerEnv ... (e + 1) * wkBlocksPerEnv - 1, and agent ids run across
// them. wkNumberEnvs, wkNumberAgents and wkBlocksPerEnv come from the rendered
// prelude. Threads for which wkIsValidAgent() is false must do no work but
// still reach every __syncthreads().
#pragma once

#ifndef WK_INDEX_CUH_
#define WK_INDEX_CUH_

// Env handled by the calling thread's block.
__device__ __forceinline__ int wkEnvId() {
  return static_cast<int>(blockIdx.x) / wkBlocksPerEnv;
}

// Agent handled by the calling thread, within its env.
__device__ __forceinline__ int wkAgentId() {
  return static_cast<int>(threadIdx.x) +
         (static_cast<int>(blockIdx.x) % wkBlocksPerEnv) * static_cast<int>(blockDim.x);
}

// True when the calling thread maps to a real (env, agent) pair.
__device__ __forceinline__ bool wkIsValidAgent() {
  return wkEnvId() < wkNumberEnvs && wkAgentId() < wkNumberAgents;
}

#endif  // WK_INDEX_CUH_
