// Action samplers: categorical (discrete heads) and Gaussian (continuous).
//
// One thread per row (row = env * num_agents + agent); any block size, rows
// beyond num_rows do nothing. Randomness is Philox4x32-10 with
// key = (seed, stream_id) and ctr = (row, counters[row], word_block, 0); each
// sampling call advances counters[row] by one (argmax / deterministic calls
// draw nothing and leave the counters alone).
//
// The per-row logic lives in __host__ __device__ functions so that a host
// program compiled by nvcc can check it bit for bit against the NumPy twins in
// warp_drive/managers/cpu_kernels.py.
#pragma once

#ifndef WK_SAMPLER_CUH_
#define WK_SAMPLER_CUH_

#include "philox.cuh"

// Error bits ORed into error_flag[0].
#define WK_ERROR_BAD_VALUE 1  // NaN / negative probability, NaN mean or std, std < 0
#define WK_ERROR_BAD_SUM 2    // |sum(probs) - 1| > WK_PROB_SUM_TOLERANCE
#define WK_ERROR_BAD_INDEX 4  // an agent index outside the joint placeholder (not written)

#define WK_PROB_SUM_TOLERANCE 1e-3f
#define WK_FLT_TINY 1.17549435e-38f       // smallest normal float: log-probabilities of 0 stay finite
#define WK_HALF_LOG_2PI 0.9189385332046727f

// First index of the maximum of p[0 .. n-1] (0 when n <= 0).
__host__ __device__ inline int wkArgmaxRow(const float* p, int n) {
  if (n <= 0) return 0;
  int best_index = 0;
  float best = p[0];
  for (int i = 1; i < n; ++i) {
    const float v = p[i];
    if (v > best) {
      best = v;
      best_index = i;
    }
  }
  return best_index;
}

// Samples one action index from the (unnormalised) probabilities p[0 .. n-1].
//
// Pass 1 sums p sequentially in float32 (round-to-nearest, no FMA) and checks
// it; pass 2 draws u in [0, 1), sets x = u * total and returns the first i whose
// running sum exceeds x. When no running sum exceeds x (rounding, NaN) it
// returns the last i with p[i] > 0, or 0 when there is none. With use_argmax
// it returns the first maximum and draws nothing. Error bits are ORed into
// *error_bits in both modes.
//
// NumPy twin: warp_drive.managers.cpu_kernels.sample_actions.
__host__ __device__ inline int wkSampleCategoricalRow(const float* p, int n, unsigned int row,
                                                      unsigned int call_count, unsigned int seed,
                                                      unsigned int stream, int use_argmax,
                                                      int* error_bits) {
  // Pass 1: running total and sanity checks.
  float total = 0.0f;
  int errors = 0;
  for (int i = 0; i < n; ++i) {
    const float v = p[i];
    if (!(v >= 0.0f)) errors |= WK_ERROR_BAD_VALUE;  // NaN or negative
    total = wkAddRn(total, v);
  }
  if (fabsf(wkSubRn(total, 1.0f)) > WK_PROB_SUM_TOLERANCE) errors |= WK_ERROR_BAD_SUM;
  *error_bits |= errors;

  if (use_argmax) return wkArgmaxRow(p, n);

  // Pass 2: inverse CDF on the same float32 running sums.
  const uint4 bits =
      wkPhilox4x32_10(make_uint4(row, call_count, 0u, 0u), make_uint2(seed, stream));
  const float x = wkMulRn(wkUniformFromBits(bits.x), total);
  float running = 0.0f;
  int last_positive = 0;
  for (int i = 0; i < n; ++i) {
    const float v = p[i];
    running = wkAddRn(running, v);
    if (running > x) return i;
    if (v > 0.0f) last_positive = i;
  }
  return last_positive;
}

// log p(action) of one probability row, floored at the smallest normal float (a row's log-probability
// stays finite). NumPy twin: warp_drive.managers.cpu_kernels._log_prob_of.
__host__ __device__ inline float wkLogProbOf(const float* p, int action) {
  return logf(fmaxf(p[action], WK_FLT_TINY));
}

// Most categorical heads one sample_action_heads launch takes (fixed-arity kernel arguments).
#define WK_MAX_SAMPLE_HEADS 4

// Samples the first num_heads (<= WK_MAX_SAMPLE_HEADS) categorical heads of one row: head h
// draws wkSampleCategoricalRow(probs[h], num_actions[h], row, call_counts[h], seed, streams[h])
// into actions[h], exactly what one sample_actions launch per head draws. With want_log_prob,
// *log_prob receives the joint log-probability, summed over the heads in order in float32 as the
// per-head launches accumulate it (log_prob_mode 1, then 2). Returns the ORed error bits.
//
// NumPy twin: warp_drive.managers.cpu_kernels.sample_action_heads.
__host__ __device__ inline int wkSampleHeadsRow(const float* const* probs, const int* num_actions,
                                                const unsigned int* call_counts,
                                                const unsigned int* streams, int num_heads,
                                                unsigned int row, unsigned int seed, int use_argmax,
                                                int* actions, int want_log_prob, float* log_prob) {
  int errors = 0;
  float joint = 0.0f;
#pragma unroll
  for (int h = 0; h < WK_MAX_SAMPLE_HEADS; ++h) {
    if (h >= num_heads) break;
    const int action = wkSampleCategoricalRow(probs[h], num_actions[h], row, call_counts[h], seed,
                                              streams[h], use_argmax, &errors);
    actions[h] = action;
    if (want_log_prob) {
      const float lp = wkLogProbOf(probs[h], action);
      joint = h == 0 ? lp : joint + lp;
    }
  }
  if (want_log_prob) *log_prob = joint;
  return errors;
}

// Samples one row of a diagonal Gaussian: out[j] = mean[j] + std[j] * z_j.
//
// Dimensions 2k and 2k+1 use Box-Muller on output words 0 and 1 of
// Philox(ctr=(row, call_count, k, 0), key=(seed, stream)). With deterministic
// it writes out[j] = mean[j] and draws nothing. Returns the error bits
// (WK_ERROR_BAD_VALUE for NaN mean or std, or std < 0).
//
// NumPy twin: warp_drive.managers.cpu_kernels.sample_gaussian_actions.
__host__ __device__ inline int wkSampleGaussianRow(const float* mean, const float* stdev,
                                                   float* out, int d, unsigned int row,
                                                   unsigned int call_count, unsigned int seed,
                                                   unsigned int stream, int deterministic) {
  int errors = 0;
  float2 z = make_float2(0.0f, 0.0f);
  for (int j = 0; j < d; ++j) {
    const float m = mean[j];
    const float s = stdev[j];
    if (m != m || !(s >= 0.0f)) errors |= WK_ERROR_BAD_VALUE;  // NaN mean, NaN or negative std
    if (deterministic) {
      out[j] = m;
      continue;
    }
    if ((j & 1) == 0) {
      const uint4 bits = wkPhilox4x32_10(
          make_uint4(row, call_count, static_cast<unsigned int>(j >> 1), 0u),
          make_uint2(seed, stream));
      z = wkBoxMuller(bits.x, bits.y);
    }
    out[j] = wkAddRn(m, wkMulRn(s, (j & 1) ? z.y : z.x));
  }
  return errors;
}

// Categorical sampling, one thread per row.
// probs: (num_rows, num_actions) float32; actions[r * action_stride + action_offset]
// receives the index (action_stride = number of heads, action_offset = head).
// NumPy twin: warp_drive.managers.cpu_kernels.sample_actions.
// log_prob_mode: 0 = no log-probability, 1 = write log p(a) to log_probs[r], 2 = add it
// (several heads of one action accumulate the joint log-probability in one buffer).
extern "C" __global__ void sample_actions(const float* probs, int* actions,
                                          unsigned int* counters, int* error_flag,
                                          float* log_probs, int num_rows, int num_actions,
                                          int action_stride, int action_offset, int seed,
                                          int stream_id, int use_argmax, int log_prob_mode) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= num_rows) return;
  const unsigned int call_count = use_argmax ? 0u : counters[r];
  int errors = 0;
  const int action = wkSampleCategoricalRow(
      probs + r * num_actions, num_actions, static_cast<unsigned int>(r), call_count,
      static_cast<unsigned int>(seed), static_cast<unsigned int>(stream_id), use_argmax, &errors);
  actions[r * action_stride + action_offset] = action;
  if (log_prob_mode != 0) {
    const float lp = wkLogProbOf(probs + r * num_actions, action);
    log_probs[r] = log_prob_mode == 2 ? log_probs[r] + lp : lp;
  }
  if (!use_argmax) counters[r] = call_count + 1u;
  if (errors != 0) atomicOr(error_flag, errors);
}

// Every categorical head of one action placeholder in one launch, one thread per row: bit for
// bit what num_heads sample_actions launches (head h: probs_h, counters_h, num_actions_h,
// stream_id_h; log_prob_mode 1 for head 0, 2 after it) followed by an index_copy_ of the
// actions into the joint placeholder give.
// probs_h: (num_rows, num_actions_h) float32; heads h >= num_heads are unused (null / 0).
// actions: (num_rows, num_heads) int32, actions[r * num_heads + h]; counters_h[r] advance by one
// unless use_argmax. log_probs (may be null): (num_rows,) float32, the joint log-probability.
// joint_actions (may be null): (num_envs, num_joint_agents, num_heads) int32; row
// r = env * num_agents + a also goes to joint row env * num_joint_agents + agent_index[a]
// (agent_index: (num_agents,) int64, the policy's agents among all).
// NumPy twin: warp_drive.managers.cpu_kernels.sample_action_heads.
extern "C" __global__ void sample_action_heads(
    const float* probs_0, const float* probs_1, const float* probs_2, const float* probs_3,
    unsigned int* counters_0, unsigned int* counters_1, unsigned int* counters_2,
    unsigned int* counters_3, int num_actions_0, int num_actions_1, int num_actions_2,
    int num_actions_3, int stream_id_0, int stream_id_1, int stream_id_2, int stream_id_3,
    int* actions, int* error_flag, float* log_probs, int* joint_actions,
    const long long* agent_index, int num_rows, int num_heads, int num_agents,
    int num_joint_agents, int seed, int use_argmax) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= num_rows) return;
  const int num_actions[WK_MAX_SAMPLE_HEADS] = {num_actions_0, num_actions_1, num_actions_2,
                                                num_actions_3};
  const float* probs[WK_MAX_SAMPLE_HEADS] = {probs_0, probs_1, probs_2, probs_3};
  unsigned int* counters[WK_MAX_SAMPLE_HEADS] = {counters_0, counters_1, counters_2, counters_3};
  const unsigned int streams[WK_MAX_SAMPLE_HEADS] = {
      static_cast<unsigned int>(stream_id_0), static_cast<unsigned int>(stream_id_1),
      static_cast<unsigned int>(stream_id_2), static_cast<unsigned int>(stream_id_3)};
  const float* rows[WK_MAX_SAMPLE_HEADS] = {nullptr, nullptr, nullptr, nullptr};
  unsigned int call_counts[WK_MAX_SAMPLE_HEADS] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int h = 0; h < WK_MAX_SAMPLE_HEADS; ++h) {
    if (h >= num_heads) break;
    rows[h] = probs[h] + r * num_actions[h];
    if (!use_argmax) call_counts[h] = counters[h][r];
  }
  int chosen[WK_MAX_SAMPLE_HEADS];
  float log_prob = 0.0f;
  const int errors = wkSampleHeadsRow(rows, num_actions, call_counts, streams, num_heads,
                                      static_cast<unsigned int>(r), static_cast<unsigned int>(seed),
                                      use_argmax, chosen, log_probs != nullptr, &log_prob);
  long long joint_row = -1;  // -1: no joint write
  int index_errors = 0;
  if (joint_actions != nullptr) {
    const long long env = r / num_agents;
    const long long agent = agent_index[r - env * num_agents];
    if (agent >= 0 && agent < num_joint_agents) {
      joint_row = env * num_joint_agents + agent;
    } else {
      index_errors = WK_ERROR_BAD_INDEX;
    }
  }
#pragma unroll
  for (int h = 0; h < WK_MAX_SAMPLE_HEADS; ++h) {
    if (h >= num_heads) break;
    actions[r * num_heads + h] = chosen[h];
    if (joint_row >= 0) joint_actions[joint_row * num_heads + h] = chosen[h];
    if (!use_argmax) counters[h][r] = call_counts[h] + 1u;
  }
  if (log_probs != nullptr) log_probs[r] = log_prob;
  if ((errors | index_errors) != 0) atomicOr(error_flag, errors | index_errors);
}

// Diagonal Gaussian sampling, one thread per row.
// mean, std, actions: (num_rows, action_dim) float32.
// NumPy twin: warp_drive.managers.cpu_kernels.sample_gaussian_actions.
// log_prob_mode: 0 = none, 1 = write the joint log-density of the row's action to log_probs[r].
extern "C" __global__ void sample_gaussian_actions(const float* mean, const float* std,
                                                   float* actions, unsigned int* counters,
                                                   int* error_flag, float* log_probs,
                                                   int num_rows, int action_dim, int seed,
                                                   int stream_id, int deterministic,
                                                   int log_prob_mode) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= num_rows) return;
  const unsigned int call_count = deterministic ? 0u : counters[r];
  const long long base = r * action_dim;
  const int errors = wkSampleGaussianRow(
      mean + base, std + base, actions + base, action_dim, static_cast<unsigned int>(r),
      call_count, static_cast<unsigned int>(seed), static_cast<unsigned int>(stream_id),
      deterministic);
  if (log_prob_mode != 0) {
    float lp = 0.0f;
    for (int j = 0; j < action_dim; ++j) {
      const float s = std[base + j];
      const float z = (actions[base + j] - mean[base + j]) / s;
      lp += -0.5f * z * z - logf(s) - WK_HALF_LOG_2PI;
    }
    log_probs[r] = lp;
  }
  if (!deterministic) counters[r] = call_count + 1u;
  if (errors != 0) atomicOr(error_flag, errors);
}

#endif  // WK_SAMPLER_CUH_
