// Fresh start states drawn on the device (the env contract's start-state hook).
//
// An env opts in by defining, in its .cu file, a device function
//
//   __device__ void <Name>StartState(WkStartKey start, <arrays and scalars, bound by name>)
//
// The framework appends a kernel Cuda<Name>ResetWithStartState to the translation unit
// (warp_drive.vocab.start_state.render_start_state_kernel): one launch, one block per env, that
// restores the env's saved copies and pool rows exactly like reset_when_done, then calls the hook
// with every thread of the block (so the hook may use __syncthreads()), then clears the done flag.
// Inside the hook: start.env is the env, threads stride over agents with threadIdx.x /
// blockDim.x, and wkStartWords(start, slot) gives four random words for slot `slot` (an agent,
// or any index the env chooses) of this env's start:
//
//   Philox4x32-10(ctr = (env, episode, slot, 0), key = (seed, WK_START_STREAM))
//
// episode = the env's reset count (the pool counter), so every env and every episode draws its
// own start. NumPy twin: warp_drive.vocab.start_state.StartKey.
#pragma once

#ifndef WK_START_STATE_CUH_
#define WK_START_STATE_CUH_

#include "philox.cuh"

// Philox stream of the start-state draws: "strt" in ASCII (warp_drive.vocab.start_state.START_STREAM).
#define WK_START_STREAM 0x73747274u

struct WkStartKey {
  unsigned int seed;
  unsigned int env;
  unsigned int episode;
};

// Four random words of slot `slot` of this env's start state.
__host__ __device__ __forceinline__ uint4 wkStartWords(const WkStartKey& start, unsigned int slot) {
  return wkPhilox4x32_10(make_uint4(start.env, start.episode, slot, 0u),
                         make_uint2(start.seed, WK_START_STREAM));
}

// low + u * (high - low) in float32 without FMA, u = wkUniformFromBits(word) in [0, 1).
// NumPy twin: warp_drive.vocab.start_state.uniform_in.
__host__ __device__ __forceinline__ float wkStartUniform(unsigned int word, float low, float high) {
  return wkAddRn(low, wkMulRn(wkUniformFromBits(word), wkSubRn(high, low)));
}

#endif  // WK_START_STATE_CUH_
