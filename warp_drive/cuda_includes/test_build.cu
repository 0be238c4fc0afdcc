// A self-contained translation unit for E=2 envs of N=5 agents, one block per env, with the
// kernels WarpDrive 2.7.1's test build held: the core service layer, 2.7.1's kernel-side names
// and kernels (compat_271.cuh, included here: it is 2.7.1 code), the dummy test kernel
// `testkernel`, and Tag gridworld's `CudaTagGridWorldStep` with 2.7.1's parameter list
// (example_envs/tag_gridworld/tag_gridworld_step_271.cu) for 4 taggers and a runner, as 2.7.1's
// unit tests launch it. Tag continuous is not in it: its kernel takes the constants of an env
// instance (TagContinuous.cuda_constants()), so EnvWrapper compiles it, also in testing mode.
//
// WarpDrive 2.7.1's tests and tutorials build it as
//   fm._compile(main_file=f"{get_project_root()}/warp_drive/cuda_includes/test_build.cu",
//               cubin_file=f"{get_project_root()}/warp_drive/cuda_bin/test_build.fatbin")
// The binary goes to the kernel cache (nothing is written inside the package) and
// fm.load_cuda_from_binary_file(cubin_file) loads it (building it on first use).

constexpr int wkNumberEnvs = 2;
constexpr int wkNumberAgents = 5;
constexpr int wkBlocksPerEnv = 1;
constexpr int wkThreadsPerBlock = (wkNumberAgents + wkBlocksPerEnv - 1) / wkBlocksPerEnv;
constexpr int wkMaxSharedBytesPerBlock = 48 * 1024;

// Tag gridworld's prelude constants: TagGridWorld(num_taggers=4).cuda_constants()
// (a CPU test checks they match).
constexpr int kNumActions = 5;
__device__ constexpr int kActionDx[5] = {0, 1, -1, 0, 0};
__device__ constexpr int kActionDy[5] = {0, 0, 0, 1, -1};
constexpr bool kUseFullObservation = true;
constexpr int kNumFullObsFeatures = 4;
constexpr int kObsDim = 21;
constexpr int kRunnerType = 1;

#include "../cuda/core/core_service.cuh"
#include "../cuda/core/compat_271.cuh"  // 2.7.1's kernel-side names and kernels
#include "../../example_envs/dummy_env/test_step.cu"
#include "../../example_envs/tag_gridworld/tag_gridworld_step_271.cu"
