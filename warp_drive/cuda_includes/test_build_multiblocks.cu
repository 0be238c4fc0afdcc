// A self-contained translation unit for E=2 envs of N=5 agents, two blocks per env (3 + 2 agents):
// the launch constants (what compiler.render_prelude generates for other shapes), the core service
// layer (with WarpDrive 2.7.1's kernel-side names) and the dummy test kernel `testkernel`.
//
// WarpDrive 2.7.1's tutorials build it as
//   fm._compile(main_file=f"{get_project_root()}/warp_drive/cuda_includes/test_build_multiblocks.cu",
//               cubin_file=f"{get_project_root()}/warp_drive/cuda_bin/test_build_multiblocks.fatbin")
// The binary goes to the kernel cache (nothing is written inside the package) and
// fm.load_cuda_from_binary_file(cubin_file) loads it. The Tag envs are not part of it: their
// kernels need the constants of an env instance (its cuda_constants()), so EnvWrapper compiles them.

constexpr int wkNumberEnvs = 2;
constexpr int wkNumberAgents = 5;
constexpr int wkBlocksPerEnv = 2;
constexpr int wkThreadsPerBlock = (wkNumberAgents + wkBlocksPerEnv - 1) / wkBlocksPerEnv;
constexpr int wkMaxSharedBytesPerBlock = 48 * 1024;

#include "../cuda/core/core_service.cuh"
#include "../../example_envs/dummy_env/test_step.cu"
