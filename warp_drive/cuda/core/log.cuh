// Episode logging for one env.
//
// log: (episode_length + 1, feature_size) 4-byte words, row t = state after
// step t (row 0 = the reset state); data: (num_envs, feature_size) words of one
// registered array. mask: (episode_length + 1,) int, mask[t] = 1 when row t
// holds valid data; rows are valid as a prefix 0 .. t (an env that stops being
// logged leaves the rest 0).
#pragma once

#ifndef WK_LOG_CUH_
#define WK_LOG_CUH_

// Copies env env_id's row of data (feature_size words) into row t of log,
// grid-stride: works for any launch geometry. Does nothing unless
// 0 <= t <= episode_length and 0 <= env_id < wkNumberEnvs.
__device__ __forceinline__ void wkLogRow(unsigned int* log, const unsigned int* data,
                                         long long feature_size, int t, int env_id,
                                         int episode_length) {
  if (t < 0 || t > episode_length || env_id < 0 || env_id >= wkNumberEnvs) return;
  unsigned int* out = log + static_cast<long long>(t) * feature_size;
  const unsigned int* in = data + static_cast<long long>(env_id) * feature_size;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < feature_size; i += stride) {
    out[i] = in[i];
  }
}

// Copies env env_id's row of data into row t of log (see wkLogRow).
// NumPy twin: warp_drive.managers.cpu_kernels.log_one_step.
extern "C" __global__ void log_one_step(unsigned int* log, const unsigned int* data,
                                        int feature_size, int t, int env_id,
                                        int episode_length) {
  wkLogRow(log, data, feature_size, t, env_id, episode_length);
}

// Clears mask[0 .. episode_length]. Launch with 1 thread.
// NumPy twin: warp_drive.managers.cpu_kernels.reset_log_mask.
extern "C" __global__ void reset_log_mask(int* mask, int episode_length) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int i = 0; i <= episode_length; ++i) mask[i] = 0;
}

// Marks row t valid: mask[0] = 1 for t == 0; for 1 <= t <= episode_length,
// mask[t] = 1 only if mask[t - 1] == 1 (valid rows stay a prefix). Out-of-range
// t does nothing. Launch with 1 thread.
// NumPy twin: warp_drive.managers.cpu_kernels.update_log_mask.
extern "C" __global__ void update_log_mask(int* mask, int t, int episode_length) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  if (t < 0 || t > episode_length) return;
  if (t == 0 || mask[t - 1] == 1) mask[t] = 1;
}

#endif  // WK_LOG_CUH_
