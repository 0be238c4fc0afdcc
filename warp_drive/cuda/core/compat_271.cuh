// The kernel-side names of WarpDrive 2.7.1, so that env kernels written for it
// compile and run here unchanged. Everything below is a thin layer over the
// core service code (index.cuh, reset.cuh, log.cuh).
//
// Compiled only when asked for (warp_drive/compat271/kernels.py): a rendered
// unit includes it after core_service.cuh when its code names one of the names
// below or the build passes compat_271=True; a self-contained main file
// includes it itself (warp_drive/cuda_includes/test_build*.cu).
//
// Index helpers:   getEnvID, getAgentID, getRankInEnv, wkMaxBlocks,
//                  get_flattened_array_index
// Env barrier:     __sync_env_threads (see the comment there: same name and
//                  contract, a different and safe implementation)
// Kernels:         reset_in_{float,int}_when_done_{2d,3d},
//                  log_one_step_in_{float,int}, init_random, free_random
//                  (2.7.1 parameter lists; NumPy twins in
//                  warp_drive/compat271/cpu_kernels.py)
// Not provided:    2.7.1's sample_actions(distr, actions, cum_distr, ...) -- the
//                  name belongs to this package's sampler kernel (sampler.cuh),
//                  which takes other arguments; use warp_drive's Sampler.
#pragma once

#ifndef WK_COMPAT_271_CUH_
#define WK_COMPAT_271_CUH_

#include "index.cuh"
#include "log.cuh"
#include "reset.cuh"

// Blocks of the whole grid: one env spans wkBlocksPerEnv consecutive blocks.
constexpr int wkMaxBlocks = wkNumberEnvs * wkBlocksPerEnv;

// Env of a block (pass blockIdx.x).
__device__ __forceinline__ int getEnvID(const int block_index) {
  return block_index / wkBlocksPerEnv;
}

// Agent of a thread within its env (pass threadIdx.x, blockIdx.x, blockDim.x).
__device__ __forceinline__ int getAgentID(const int thread_index, const int block_index,
                                          const int block_dim) {
  return thread_index + (block_index % wkBlocksPerEnv) * block_dim;
}

// Position of a block among the blocks of its env, 0 .. wkBlocksPerEnv - 1.
__device__ __forceinline__ int getRankInEnv(const int block_index) {
  return block_index % wkBlocksPerEnv;
}

// Row-major offset of the multi-index index_arr[0 .. ndim-1] in an array of
// extents dim_arr[0 .. ndim-1] (dim_arr[0] is not needed, as in C).
__device__ __forceinline__ int get_flattened_array_index(const int* index_arr,
                                                         const int* dim_arr,
                                                         const int ndim) {
  int offset = 0;
  for (int d = 0; d < ndim; ++d) offset = (d == 0 ? 0 : offset * dim_arr[d]) + index_arr[d];
  return offset;
}

// ---------------------------------------------------------------------------
// __sync_env_threads(): a barrier for all threads of the blocks of one env.
//
// Contract (as in 2.7.1): every thread of every block of the env calls it; no
// thread continues until all of them have arrived, and global-memory writes
// made before it are visible to every block of the env after it. With
// wkBlocksPerEnv == 1 it is exactly __syncthreads().
//
// Differences from 2.7.1, which spun on one flag per block and deadlocked (or
// raced) in several cases:
//  * it is a generation barrier: per env, an arrival counter and a round
//    number. The last block to arrive resets the counter and advances the
//    round; the others wait for the round to change. The state is back at a
//    consistent point after every round, so any number of calls per kernel and
//    any number of launches are fine;
//  * blocks whose env id is >= wkNumberEnvs (a grid larger than the envs)
//    only synchronise their own threads instead of touching foreign state;
//  * call it from every thread, outside `if (agent < wkNumberAgents)` guards
//    (2.7.1's own kernels called it inside such guards: a divergent barrier);
//  * blocks of one env wait for each other, which only works when they are all
//    resident on the GPU at once. The function manager checks this on the host:
//    a kernel that calls __sync_env_threads (directly or through device
//    functions) with wkBlocksPerEnv > 1 is only launched on a grid whose blocks
//    all fit on the device at the same time (occupancy API), and the grid must
//    hold whole envs; otherwise it raises GeometryError naming the fix, where
//    2.7.1 hung the GPU. Only blockIdx.x is used: grid.y = grid.z = 1.
// ---------------------------------------------------------------------------
__device__ unsigned int wkEnvBarrierArrivals[wkNumberEnvs];
__device__ unsigned int wkEnvBarrierRound[wkNumberEnvs];

__device__ __forceinline__ void wkBarrierPause() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(32);
#endif
}

__device__ __forceinline__ void __sync_env_threads() {
  __syncthreads();
  if (wkBlocksPerEnv > 1) {
    const int env = static_cast<int>(blockIdx.x) / wkBlocksPerEnv;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 && env < wkNumberEnvs) {
      volatile unsigned int* round = &wkEnvBarrierRound[env];
      const unsigned int my_round = *round;  // read before arriving: the round cannot move on without us
      __threadfence();  // this block's writes (ordered by the __syncthreads above) before the arrival
      const unsigned int arrived = atomicAdd(&wkEnvBarrierArrivals[env], 1u);
      if (arrived == static_cast<unsigned int>(wkBlocksPerEnv - 1)) {
        atomicExch(&wkEnvBarrierArrivals[env], 0u);  // ready for the next round ...
        __threadfence();
        atomicAdd(&wkEnvBarrierRound[env], 1u);      // ... before anyone is released
      } else {
        while (*round == my_round) wkBarrierPause();
      }
      __threadfence();  // other blocks' writes are visible to this block from here on
    }
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------
// 2.7.1's reset kernels: restore env e's slice from its saved copy `ref` when
// force_reset > 0 or done[e] > 0. 2d: (E, feature_dim) arrays; 3d: (E,
// agent_dim, feature_dim). Any launch geometry whose blocks are env-major
// (grid = E * wkBlocksPerEnv); the copy strides over the env's threads.
// ---------------------------------------------------------------------------
__device__ __forceinline__ void wkResetEnvSlice(unsigned int* data, const unsigned int* ref,
                                                const int* done, long long slice,
                                                int force_reset) {
  const int env = getEnvID(blockIdx.x);
  if (env >= wkNumberEnvs || !(force_reset > 0 || done[env] > 0)) return;
  const long long offset = static_cast<long long>(env) * slice;
  wkCopyWords(data + offset, ref + offset, slice,
              getAgentID(threadIdx.x, blockIdx.x, blockDim.x),
              static_cast<long long>(blockDim.x) * wkBlocksPerEnv);
}

extern "C" __global__ void reset_in_float_when_done_2d(float* data, const float* ref, int* done,
                                                       int feature_dim, int force_reset) {
  wkResetEnvSlice(reinterpret_cast<unsigned int*>(data),
                  reinterpret_cast<const unsigned int*>(ref), done, feature_dim, force_reset);
}

extern "C" __global__ void reset_in_int_when_done_2d(int* data, const int* ref, int* done,
                                                     int feature_dim, int force_reset) {
  wkResetEnvSlice(reinterpret_cast<unsigned int*>(data),
                  reinterpret_cast<const unsigned int*>(ref), done, feature_dim, force_reset);
}

extern "C" __global__ void reset_in_float_when_done_3d(float* data, const float* ref, int* done,
                                                       int agent_dim, int feature_dim,
                                                       int force_reset) {
  wkResetEnvSlice(reinterpret_cast<unsigned int*>(data),
                  reinterpret_cast<const unsigned int*>(ref), done,
                  static_cast<long long>(agent_dim) * feature_dim, force_reset);
}

extern "C" __global__ void reset_in_int_when_done_3d(int* data, const int* ref, int* done,
                                                     int agent_dim, int feature_dim,
                                                     int force_reset) {
  wkResetEnvSlice(reinterpret_cast<unsigned int*>(data),
                  reinterpret_cast<const unsigned int*>(ref), done,
                  static_cast<long long>(agent_dim) * feature_dim, force_reset);
}

// ---------------------------------------------------------------------------
// 2.7.1's log kernels: copy env env_id's (wkNumberAgents, feature_dim) slice of
// data into row `timestep` of log, shape (episode_length + 1, wkNumberAgents,
// feature_dim). Note the 2.7.1 argument order (episode_length before env_id).
// ---------------------------------------------------------------------------
extern "C" __global__ void log_one_step_in_float(float* log, float* data, int feature_dim,
                                                 int timestep, int episode_length, int env_id) {
  wkLogRow(reinterpret_cast<unsigned int*>(log), reinterpret_cast<const unsigned int*>(data),
           static_cast<long long>(wkNumberAgents) * feature_dim, timestep, env_id,
           episode_length);
}

extern "C" __global__ void log_one_step_in_int(int* log, int* data, int feature_dim,
                                               int timestep, int episode_length, int env_id) {
  wkLogRow(reinterpret_cast<unsigned int*>(log), reinterpret_cast<const unsigned int*>(data),
           static_cast<long long>(wkNumberAgents) * feature_dim, timestep, env_id,
           episode_length);
}

// ---------------------------------------------------------------------------
// 2.7.1 created one curand state per thread in init_random and deleted them in
// free_random. Random numbers here are counter based (philox.cuh): there is no
// per-thread state, and the sampler is seeded on the host (Sampler.init_random).
// init_random only records its seed (wkLegacySeed) and free_random does
// nothing, so 2.7.1 code that launches them keeps working.
// ---------------------------------------------------------------------------
__device__ int wkLegacySeed;

extern "C" __global__ void init_random(int seed) {
  if (blockIdx.x == 0 && threadIdx.x == 0) wkLegacySeed = seed;
}

extern "C" __global__ void free_random() {}

#endif  // WK_COMPAT_271_CUH_
