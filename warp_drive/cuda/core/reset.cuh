// Reset-when-done: one launch restores every registered array for every env
// that is done (or for all envs when forced).
//
// Each registered entry k is a pair of device pointers (dst[k], src[k]) and a
// row size sizes[k] in 4-byte words (float32 and int32 data share the kernel):
//   * saved copy (pool_sizes[k] == 0): src holds the env-0..E-1 start state,
//     row = e;
//   * reset pool (pool_sizes[k] > 0): src holds pool_sizes[k] candidate rows,
//     row = floor(u_e * pool_sizes[k]).
// u_e is ONE uniform per env and reset, shared by every pool entry of that env
// (so e.g. x and y pools stay aligned), drawn from
// Philox(key=(seed, WK_POOL_STREAM), ctr=(e, pool_counters[e], 0, 0));
// pool_counters[e] advances by one per reset of env e.
#pragma once

#ifndef WK_RESET_CUH_
#define WK_RESET_CUH_

#include "philox.cuh"

// Philox stream of the reset pools: "pool" in ASCII.
#define WK_POOL_STREAM 0x706F6F6Cu

// Pool row picked for env e's reset with call count c, out of pool_size rows.
__host__ __device__ __forceinline__ unsigned int wkPoolRow(unsigned int seed, unsigned int e,
                                                           unsigned int c,
                                                           unsigned int pool_size) {
  const uint4 bits =
      wkPhilox4x32_10(make_uint4(e, c, 0u, 0u), make_uint2(seed, WK_POOL_STREAM));
  return wkScaleBitsToRange(bits.x, pool_size);  // exact floor(u * pool_size)
}

// dst[i] = src[i] for i = first, first + stride, ... < count (4-byte words).
__device__ __forceinline__ void wkCopyWords(unsigned int* dst, const unsigned int* src,
                                            long long count, long long first,
                                            long long stride) {
  for (long long i = first; i < count; i += stride) dst[i] = src[i];
}

// Restores env e's rows of every registered entry when env e resets (forced or done) and
// returns whether it does, with the env's reset count before this reset (its episode index).
// Called by every thread of block e (any block size); `reset` is the same for the whole block.
struct WkEnvReset {
  bool reset;
  unsigned int episode;
};

__device__ __forceinline__ WkEnvReset wkRestoreEnv(int e, const unsigned long long* dst,
                                                   const unsigned long long* src, const int* sizes,
                                                   const int* pool_sizes, int num_entries,
                                                   const int* done,
                                                   const unsigned int* pool_counters, int seed,
                                                   int force_reset) {
  // Every thread reads done / the pool counter before wkFinishReset's barrier, after which they
  // may be cleared / advanced.
  const WkEnvReset r{force_reset != 0 || done[e] > 0, pool_counters[e]};
  if (r.reset) {
    for (int k = 0; k < num_entries; ++k) {
      const long long size = sizes[k];
      const int pool_size = pool_sizes[k];
      const long long src_row =
          pool_size > 0 ? static_cast<long long>(wkPoolRow(static_cast<unsigned int>(seed),
                                                           static_cast<unsigned int>(e),
                                                           r.episode,
                                                           static_cast<unsigned int>(pool_size)))
                        : static_cast<long long>(e);
      unsigned int* dst_words = reinterpret_cast<unsigned int*>(dst[k]) + e * size;
      const unsigned int* src_words = reinterpret_cast<const unsigned int*>(src[k]) + src_row * size;
      wkCopyWords(dst_words, src_words, size, threadIdx.x, blockDim.x);
    }
  }
  return r;
}

// After a barrier: advances env e's reset count and clears its done flag and timestep.
__device__ __forceinline__ void wkFinishReset(int e, WkEnvReset r, int* done, int* timestep,
                                              unsigned int* pool_counters, int undo_done) {
  __syncthreads();
  if (r.reset && threadIdx.x == 0) {
    pool_counters[e] = r.episode + 1u;
    if (undo_done) {
      done[e] = 0;
      timestep[e] = 0;
    }
  }
}

// grid = num_envs blocks (block e handles env e), any block size.
// NumPy twin: warp_drive.managers.cpu_kernels.reset_when_done.
extern "C" __global__ void reset_when_done(const unsigned long long* dst,
                                           const unsigned long long* src, const int* sizes,
                                           const int* pool_sizes, int num_entries, int* done,
                                           int* timestep, unsigned int* pool_counters, int seed,
                                           int force_reset, int undo_done) {
  const int e = blockIdx.x;
  if (e >= wkNumberEnvs) return;  // whole block leaves: no barrier is skipped
  const WkEnvReset r = wkRestoreEnv(e, dst, src, sizes, pool_sizes, num_entries, done,
                                    pool_counters, seed, force_reset);
  wkFinishReset(e, r, done, timestep, pool_counters, undo_done);
}

// One thread per env: clears done[e] and timestep[e] when forced or done.
// NumPy twin: warp_drive.managers.cpu_kernels.undo_done_flag_and_reset_timestep.
extern "C" __global__ void undo_done_flag_and_reset_timestep(int* done, int* timestep,
                                                             int force_reset) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= wkNumberEnvs) return;
  if (force_reset != 0 || done[e] > 0) {
    done[e] = 0;
    timestep[e] = 0;
  }
}

#endif  // WK_RESET_CUH_
