// warp_drive core service layer: include once after the rendered prelude
// (which defines constexpr int wkNumberEnvs, wkNumberAgents, wkBlocksPerEnv).
//
// Kernels (extern "C", signatures in docs/architecture.md; NumPy twins in
// warp_drive/managers/cpu_kernels.py):
//   sample_actions, sample_action_heads,
//   sample_gaussian_actions                          (sampler.cuh)
//   reset_when_done, undo_done_flag_and_reset_timestep (reset.cuh)
//   WkStartKey, wkStartWords, wkStartUniform: the start-state hook (start_state.cuh)
//   log_one_step, reset_log_mask, update_log_mask     (log.cuh)
//
// Not included here: WarpDrive 2.7.1's kernel-side names and kernels
// (compat_271.cuh: getEnvID, getAgentID, getRankInEnv, __sync_env_threads,
// get_flattened_array_index, wkMaxBlocks, its reset / log / init_random /
// free_random kernels). A rendered unit includes it after this file only when
// its code names one of them or the build asks for it
// (warp_drive/compat271/kernels.py); a self-contained main file includes it
// itself.
#pragma once

#ifndef WK_CORE_SERVICE_CUH_
#define WK_CORE_SERVICE_CUH_

#include "philox.cuh"
#include "index.cuh"
#include "sampler.cuh"
#include "reset.cuh"
#include "start_state.cuh"
#include "log.cuh"

#endif  // WK_CORE_SERVICE_CUH_
