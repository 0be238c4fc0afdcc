// Philox4x32-10 counter-based random numbers (Salmon et al., SC'11).
//
// A draw is a pure function of a 4-word counter and a 2-word key, so no
// per-thread generator state exists. Counter layout used by warp_drive
// (docs/architecture.md): ctr = (row, call_count[row], word_block, 0),
// key = (seed, stream_id).
//
// Every helper here is __host__ __device__ so a host program compiled by nvcc
// can check it against the bit-exact NumPy twin in warp_drive/utils/philox.py
// (tests/cpu/test_philox_cuda_host.py).
#pragma once

#ifndef WK_PHILOX_CUH_
#define WK_PHILOX_CUH_

#if !defined(__CUDACC_RTC__)
#include <math.h>  // host fallbacks (NVRTC provides the device math builtins)
#endif

// Philox4x32 multipliers and Weyl key increments (Random123 values).
#define WK_PHILOX_M0 0xD2511F53u
#define WK_PHILOX_M1 0xCD9E8D57u
#define WK_PHILOX_W0 0x9E3779B9u
#define WK_PHILOX_W1 0xBB67AE85u

// High 32 bits of the 64-bit product a * b.
__host__ __device__ __forceinline__ unsigned int wkMulHi32(unsigned int a, unsigned int b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return static_cast<unsigned int>(
      (static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b)) >> 32);
#endif
}

// IEEE round-to-nearest float add / multiply that nvcc will never contract into
// an FMA, so host, device and NumPy results agree bit for bit.
__host__ __device__ __forceinline__ float wkAddRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

__host__ __device__ __forceinline__ float wkSubRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

__host__ __device__ __forceinline__ float wkMulRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// One Philox4x32 round.
__host__ __device__ __forceinline__ uint4 wkPhiloxRound(uint4 ctr, uint2 key) {
  const unsigned int hi0 = wkMulHi32(WK_PHILOX_M0, ctr.x);
  const unsigned int lo0 = WK_PHILOX_M0 * ctr.x;
  const unsigned int hi1 = wkMulHi32(WK_PHILOX_M1, ctr.z);
  const unsigned int lo1 = WK_PHILOX_M1 * ctr.z;
  return make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
}

// Philox4x32 with 10 rounds. NumPy twin: warp_drive.utils.philox.philox4x32_10.
__host__ __device__ __forceinline__ uint4 wkPhilox4x32_10(uint4 ctr, uint2 key) {
#pragma unroll
  for (int round = 0; round < 9; ++round) {
    ctr = wkPhiloxRound(ctr, key);
    key.x += WK_PHILOX_W0;
    key.y += WK_PHILOX_W1;
  }
  return wkPhiloxRound(ctr, key);
}

// Uniform float in [0, 1) from the top 24 bits of a word (exact in float32).
// NumPy twin: warp_drive.utils.philox.uniform_from_bits.
__host__ __device__ __forceinline__ float wkUniformFromBits(unsigned int x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// floor(u * n) for u = wkUniformFromBits(x), computed exactly in integers
// (u * n in float32 could round up to n for large n).
__host__ __device__ __forceinline__ unsigned int wkScaleBitsToRange(unsigned int x,
                                                                    unsigned int n) {
  return static_cast<unsigned int>(
      (static_cast<unsigned long long>(x >> 8) * static_cast<unsigned long long>(n)) >> 24);
}

// First output word of Philox(ctr=(c0, c1, c2, 0), key=(seed, stream)) as a
// uniform in [0, 1).
__host__ __device__ __forceinline__ float wkUniform01(unsigned int seed, unsigned int stream,
                                                      unsigned int c0, unsigned int c1,
                                                      unsigned int c2) {
  const uint4 out = wkPhilox4x32_10(make_uint4(c0, c1, c2, 0u), make_uint2(seed, stream));
  return wkUniformFromBits(out.x);
}

// Box-Muller: two independent standard normals from two random words.
// u1 = 1 - uniform(x0) lies in (0, 1] so log(u1) is finite; u2 = uniform(x1).
// z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), r = sqrt(-2 log u1).
// NumPy twin: warp_drive.utils.philox.box_muller (equal within float32
// rounding of the transcendental functions).
__host__ __device__ __forceinline__ float2 wkBoxMuller(unsigned int x0, unsigned int x1) {
  const float u1 = 1.0f - wkUniformFromBits(x0);  // exact: both are multiples of 2^-24
  const float u2 = wkUniformFromBits(x1);
#ifdef __CUDA_ARCH__
  const float r = sqrtf(-2.0f * logf(u1));
  float s, c;
  sincospif(2.0f * u2, &s, &c);  // 2*u2 is exact; sincospi avoids the pi rounding
  return make_float2(r * c, r * s);
#else
  const double r = sqrt(-2.0 * log(static_cast<double>(u1)));
  const double a = 6.283185307179586476925286766559 * static_cast<double>(u2);
  return make_float2(static_cast<float>(r * cos(a)), static_cast<float>(r * sin(a)));
#endif
}

#endif  // WK_PHILOX_CUH_
