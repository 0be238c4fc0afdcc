# %% [markdown]
# # Tutorial 4: write your own environment
#
# A WarpDrive environment is **dual mode**: one Python class that steps on the GPU with a CUDA
# kernel (`pycuda` backend) and on the CPU with a vectorised NumPy function (`cpu` backend). Both
# work in place on the same named arrays. The NumPy step is the specification: write it first, test
# it, then port it to CUDA and check that the two agree.
#
# We build **Gather**: N agents on the integer cells 0..L of a line. Each step every agent moves
# left, stays or moves right (`Discrete(3)`); positions are clipped to [0, L]. Every agent is
# rewarded `-|x - centroid| / L`, where the centroid is the mean position of all agents of its env
# after the move. The episode ends when all agents stand on one cell, or after T steps. Each agent
# observes `(x / L, centroid / L, t / T)`.
#
# The centroid needs the new positions of *all* agents: a per-env reduction inside the kernel, the
# pattern most multi-agent envs need.
#
# Order of work (the same as in [docs/adding_an_env.md](../docs/adding_an_env.md)): NumPy
# reference, constants, data dictionary, kernel, argument binding, registration, consistency check.

# %% tags=["install"]
# Install warp_drive from a clone of its repository (the package is not on PyPI), with the CUDA
# extra. Jupyter runs this notebook in tutorials/, so ".." is the repository root; pycuda is
# built against nvcc (an NVIDIA driver and the CUDA toolkit are needed; on a machine without a
# GPU drop "cuda" from the extras). In a terminal at the repository root:
#     pip install -e ".[cuda]"
# %pip install -q -e "..[cuda]"

# %%
from warp_drive.cuda.device import has_cuda_device

BACKEND = "pycuda" if has_cuda_device() else "cpu"
print("backend:", BACKEND)

# %% [markdown]
# ## 1. The NumPy reference
#
# Write the step for **all envs at once**: arrays carry the env axis first, (E, N) per agent and (E,)
# per env. Keep everything float32 / int32, and write the arithmetic in the order the kernel will
# use, so the two backends can agree bit for bit.

# %%
import numpy as np

OBS_DIM = 3  # x / L, centroid / L, t / T
NUM_ACTIONS = 3  # 0 = left, 1 = stay, 2 = right


def observe(x: np.ndarray, timestep: np.ndarray, grid_length: int, episode_length: int):
    """Observations (E, N, 3) and centroids (E,) of positions x (E, N) at time steps (E,)."""
    length = np.float32(grid_length)
    centroid = x.sum(axis=1).astype(np.float32) / np.float32(x.shape[1])
    obs = np.empty((*x.shape, OBS_DIM), np.float32)
    obs[..., 0] = x.astype(np.float32) / length
    obs[..., 1] = (centroid / length)[:, None]
    obs[..., 2] = (timestep.astype(np.float32) / np.float32(episode_length))[:, None]
    return obs, centroid


def gather_step(x, actions, observations, rewards, done, timestep, grid_length, episode_length):
    """One step of every Gather env, in place.

    Shapes: x, actions (E, N) int32; observations (E, N, 3) float32; rewards (E, N) float32;
    done, timestep (E,) int32.
    """
    np.clip(x + actions - 1, 0, grid_length, out=x)
    timestep += 1
    obs, centroid = observe(x, timestep, grid_length, episode_length)
    observations[...] = obs
    rewards[...] = -np.abs(x.astype(np.float32) - centroid[:, None]) / np.float32(grid_length)
    gathered = x.min(axis=1) == x.max(axis=1)
    done[gathered | (timestep >= episode_length)] = 1


# %% [markdown]
# Check it by hand on a case small enough to work out on paper: one env, three agents at 0, 2 and 4
# on a line of length 4, moving right, staying and moving left.

# %%
x = np.array([[0, 2, 4]], np.int32)
observations = np.zeros((1, 3, OBS_DIM), np.float32)
rewards = np.zeros((1, 3), np.float32)
done, timestep = np.zeros(1, np.int32), np.zeros(1, np.int32)
actions = np.array([[2, 1, 0]], np.int32)

gather_step(x, actions, observations, rewards, done, timestep, grid_length=4, episode_length=10)
assert x.tolist() == [[1, 2, 3]] and rewards.tolist() == [[-0.25, 0.0, -0.25]] and done[0] == 0
gather_step(x, actions, observations, rewards, done, timestep, grid_length=4, episode_length=10)
assert x.tolist() == [[2, 2, 2]] and rewards.tolist() == [[0.0, 0.0, 0.0]] and done[0] == 1
print("hand-computed steps OK; last observation of agent 0:", observations[0, 0])

# %% [markdown]
# ## 2. The environment class
#
# The class derives from `CUDAEnvironmentContext` and provides:
#
# | member | purpose |
# |---|---|
# | `name` | the kernel is called `Cuda<name>Step` |
# | `max_blocks_per_env = 1` | the step needs the whole env in one block (its reduction is in shared memory) |
# | `step_kernel_args` | the kernel's arguments, **by data name**, in kernel order |
# | `num_agents`, `episode_length`, `observation_space`, `action_space` | sizes and gymnasium spaces (dicts agent id -> space) |
# | `reset()` | host reset of one env, returns `{agent_id: observation}` |
# | `get_data_dictionary()` | a `DataFeed` of the state arrays (flag what a reset restores) |
# | `cuda_constants()` | compile-time constants for the kernel (`constexpr` in the prelude) |
# | `numpy_step(data)` | the CPU step: `data` maps names to the live NumPy arrays |
#
# The wrapper creates `observations` (E, N, 3), `sampled_actions` (E, N, 1), `rewards`, `_done_`
# and `_timestep_` itself, from `reset()` and the spaces. Reserved names come from `Constants`.
#
# `cuda_constants()` is the single source of truth for values the kernel needs: the kernel reads
# `kGridLength`, the NumPy step reads `self.grid_length`, both from the same attribute.

# %%
from gymnasium import spaces

from warp_drive.env import Constants, CUDAEnvironmentContext, DataFeed  # the env contract's one import path
from warp_drive.errors import ConfigError


class Gather(CUDAEnvironmentContext):
    """Agents on a line gather at their centroid (tutorial 4)."""

    name = "Gather"
    cuda_source = None  # the .cu file, set in section 4
    max_blocks_per_env = 1  # one block per env: the wrapper refuses more, check_build builds only this
    step_kernel_args = (
        "x",
        Constants.ACTIONS,
        Constants.OBSERVATIONS,
        Constants.REWARDS,
        Constants.DONE,
        Constants.TIMESTEP,
        ("episode_length", "meta"),
    )

    def __init__(self, num_agents: int = 8, grid_length: int = 20, episode_length: int = 40, seed: int = 0,
                 env_backend: str = "cpu") -> None:
        if not 1 <= num_agents <= 1024:
            raise ConfigError(f"Gather: num_agents={num_agents}; the kernel uses one block per env, so 1..1024")
        self.num_agents = num_agents
        self.grid_length = grid_length
        self.episode_length = episode_length
        self.env_backend = env_backend
        self.rng = np.random.default_rng(seed)
        box = spaces.Box(0.0, 1.0, shape=(OBS_DIM,), dtype=np.float32)
        self.observation_space = {a: box for a in range(num_agents)}
        self.action_space = {a: spaces.Discrete(NUM_ACTIONS) for a in range(num_agents)}
        self.x0 = np.zeros(num_agents, np.int32)

    def reset(self) -> dict:
        self.x0 = self.rng.integers(0, self.grid_length + 1, size=self.num_agents).astype(np.int32)
        obs, _ = observe(self.x0[None], np.zeros(1, np.int32), self.grid_length, self.episode_length)
        return {a: obs[0, a] for a in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("x", self.x0, save_copy_and_apply_at_reset=True)  # the wrapper adds the env axis
        return feed

    def cuda_constants(self) -> dict:
        return {"kGridLength": self.grid_length, "kObsDim": OBS_DIM}

    def numpy_step(self, data) -> None:
        gather_step(data["x"], data[Constants.ACTIONS][..., 0], data[Constants.OBSERVATIONS],
                    data[Constants.REWARDS], data[Constants.DONE], data[Constants.TIMESTEP],
                    self.grid_length, int(data["episode_length"]))


# %% [markdown]
# The environment already runs, on the CPU backend, with the full WarpDrive machinery (data store,
# resets, sampler). Every replica starts from the host reset's layout.

# %%
from warp_drive.env.env_wrapper import EnvWrapper

cpu_wrapper = EnvWrapper(Gather(num_agents=8), num_envs=4, env_backend="cpu")
cpu_wrapper.reset_all_envs()
cpu_dm = cpu_wrapper.cuda_data_manager
print("arrays:", [n for n in cpu_dm.names() if not n.startswith("_")])
print("x at reset (env 0):", cpu_dm.pull_data_from_device("x")[0])

rng = np.random.default_rng(0)
for _ in range(3):
    cpu_wrapper.step_all_envs(rng.integers(0, NUM_ACTIONS, size=(4, 8, 1)).astype(np.int32))
print("x after 3 random steps (env 0):", cpu_dm.pull_data_from_device("x")[0])
print("rewards (env 0):", cpu_dm.pull_data_from_device("rewards")[0].round(3))

# %% [markdown]
# ## 3. The CUDA kernel
#
# One block per env, one thread per agent. The kernel mirrors `gather_step` line by line:
#
# * **index mapping**: `wkEnvId()` and `wkAgentId()`; agent `a` of env `e` is row
#   `e * wkNumberAgents + a`, its observation starts at `row * kObsDim`;
# * **guards**: the block may have more threads than agents, so per-agent work sits under
#   `if (is_agent)`;
# * **the reduction**: the centroid needs every agent's new position. Agents add into a
#   `__shared__` integer (one block = one env, so shared memory is per env) and wait at
#   `__syncthreads()`. Every thread, agent or not, must reach every barrier: a `__syncthreads()`
#   inside `if (is_agent)` would hang or corrupt the block;
# * **precision**: the same float32 operations in the same order as NumPy (no fast-math), so CPU and
#   GPU agree exactly.
#
# With more than 1024 agents an env spans several blocks, and shared memory and `__syncthreads()`
# no longer cover the env: split the step into phase kernels (tutorial 6 and the guide).
#
# We write the kernel to `gather_step.cu` next to the notebook; in a repository it sits next to the
# env's Python file.

# %%
from pathlib import Path

GATHER_KERNEL = r"""
// Gather: one step of every env. Specification: gather_step() (NumPy) in tutorial 4.
// One block per env (num_agents <= 1024), one thread per agent.
extern "C" __global__ void CudaGatherStep(int* x_arr, const int* sampled_actions_arr,
                                          float* observations_arr, float* rewards_arr,
                                          int* done_arr, int* timestep_arr, int episode_length) {
  __shared__ int sum;      // per-env reductions (one block per env)
  __shared__ int lowest;
  __shared__ int highest;
  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool is_agent = agent < wkNumberAgents;  // extra threads of the block do no work...
  const int row = env * wkNumberAgents + agent;

  if (threadIdx.x == 0) {
    sum = 0;
    lowest = kGridLength;
    highest = 0;
  }
  __syncthreads();  // ...but every thread reaches every barrier

  // 1. move: np.clip(x + actions - 1, 0, L)
  int x = 0;
  if (is_agent) {
    x = min(max(x_arr[row] + sampled_actions_arr[row] - 1, 0), kGridLength);
    x_arr[row] = x;
    atomicAdd(&sum, x);
    atomicMin(&lowest, x);
    atomicMax(&highest, x);
  }
  __syncthreads();  // all agents moved: sum, lowest and highest are final

  // 2. observations and rewards: observe() and the reward line of gather_step()
  const int t = timestep_arr[env] + 1;
  if (is_agent) {
    const float length = static_cast<float>(kGridLength);
    const float centroid = static_cast<float>(sum) / static_cast<float>(wkNumberAgents);
    const float xf = static_cast<float>(x);
    float* obs = observations_arr + row * kObsDim;
    obs[0] = xf / length;
    obs[1] = centroid / length;
    obs[2] = static_cast<float>(t) / static_cast<float>(episode_length);
    rewards_arr[row] = -fabsf(xf - centroid) / length;
  }
  __syncthreads();  // every thread has read timestep_arr[env] before it changes

  // 3. time step and done flag, once per env
  if (threadIdx.x == 0) {
    timestep_arr[env] = t;
    if (t >= episode_length || lowest == highest) done_arr[env] = 1;
  }
}
"""

CUDA_SOURCE = Path("gather_step.cu").resolve()
CUDA_SOURCE.write_text(GATHER_KERNEL)
Gather.cuda_source = CUDA_SOURCE
print("wrote", CUDA_SOURCE)

# %% [markdown]
# The constants reach the kernel through a generated prelude that WarpDrive puts in front of the
# core service layer and your file. You can render it on any machine:

# %%
from warp_drive.cuda.compiler import render_prelude

print(render_prelude(num_envs=4, num_agents=8, constants=Gather().cuda_constants()))

# %% [markdown]
# ## 4. Argument binding
#
# `step_kernel_args` lists the kernel's arguments by data name: `"x"` is the array `x`,
# `("episode_length", "meta")` a meta value of the data manager. Before the first launch WarpDrive
# parses the kernel signature and checks the list against it (count, pointer or scalar, float or
# int, and names bound at the wrong position), so a swapped argument fails loudly instead of
# computing garbage. The kernel parameter `x_arr` matches the data name `x` (an `_arr` suffix and
# surrounding underscores are ignored). The parser is plain Python:

# %%
from warp_drive.cuda.signature import parse_kernel_signatures
from warp_drive.managers.function_manager import arg_name

params = parse_kernel_signatures(GATHER_KERNEL)["CudaGatherStep"]
assert len(params) == len(Gather.step_kernel_args)
for spec, param in zip(Gather.step_kernel_args, params):
    kind = f"{param.ctype}{'*' if param.is_pointer else ''}"
    print(f"{arg_name(spec):18s} -> {kind:7s} {param.name}")

# %% [markdown]
# ## 5. Run it on the GPU and compare with the CPU
#
# On the pycuda backend the `EnvWrapper` renders prelude + core layer + `gather_step.cu`, compiles
# it (cached), checks the arguments and launches `CudaGatherStep` on every step. Feed both backends
# the same actions and compare:

# %% tags=["gpu"]
if BACKEND == "pycuda":
    gpu_wrapper = EnvWrapper(Gather(num_agents=8), num_envs=4, env_backend="pycuda")
    gpu_wrapper.reset_all_envs()
    cpu_wrapper.reset_all_envs()
    gpu_dm = gpu_wrapper.cuda_data_manager
    for step in range(5):
        acts = rng.integers(0, NUM_ACTIONS, size=(4, 8, 1)).astype(np.int32)
        cpu_wrapper.step_all_envs(acts)
        gpu_wrapper.step_all_envs(acts)
        for name in ("x", "observations", "rewards", "_done_", "_timestep_"):
            assert np.array_equal(cpu_dm.pull_data_from_device(name), gpu_dm.pull_data_from_device(name)), name
    print("5 steps: CPU and GPU arrays are identical")

# %% [markdown]
# **Without a GPU** the cells of this section are skipped. On a CPU you can check the NumPy step (the
# hand-computed steps above), train the env on the cpu backend (section 7), compile the kernel with nvcc
# alone (`python -m warp_drive.cuda.check_build --envs my_pkg`, once your package registers the env) and
# check the kernel's signature (section 4), but not that the kernel computes what the NumPy step does:
# `EnvironmentCPUvsGPU(..., gpu_env_backend="cpu")` would compare the NumPy step with itself (it warns
# so). That check needs a GPU.
#
# `EnvironmentCPUvsGPU` does this systematically: for each config and seed it runs both backends
# from the same reset with the same random actions for at least two episodes per env, compares
# every array with an env axis after every step and every reset, and raises a `ConsistencyError`
# naming the first mismatch (config, seed, step, array, env, agent, feature, both values).

# %% tags=["gpu"]
if BACKEND == "pycuda":
    from warp_drive.testing.consistency import EnvironmentCPUvsGPU

    checker = EnvironmentCPUvsGPU(
        dual_mode_env_class=Gather,
        env_configs={
            "small": {"num_agents": 3, "grid_length": 4, "episode_length": 10},
            "default": {"num_agents": 8},
            "many agents": {"num_agents": 300, "grid_length": 100, "episode_length": 30},
        },
        num_envs=5,
        num_episodes=2,
    )
    report = checker.test_env_reset_and_step(seeds=(0, 1))
    print(f"consistent: {report.steps} steps, {report.episodes_completed} episodes, configs {report.configs}")
    print("largest float difference per array:", report.max_abs_error)

# %% [markdown]
# What a bug looks like: integer division in the centroid (`sum / wkNumberAgents` with two ints) is
# a classic. The checker pinpoints it:

# %% tags=["gpu"]
if BACKEND == "pycuda":
    from warp_drive.errors import ConsistencyError

    buggy = Path("gather_step_buggy.cu").resolve()
    buggy.write_text(GATHER_KERNEL.replace(
        "static_cast<float>(sum) / static_cast<float>(wkNumberAgents)",
        "static_cast<float>(sum / wkNumberAgents)"))

    class BuggyGather(Gather):
        cuda_source = buggy

    try:
        EnvironmentCPUvsGPU(cpu_env_class=Gather, cuda_env_class=BuggyGather, num_envs=5).test_env_reset_and_step(seeds=(0,))
    except ConsistencyError as err:
        print("caught:", err)

# %% [markdown]
# ## 6. Registration
#
# An `EnvironmentRegistrar` maps names to env classes (and optionally their `.cu` files), so an
# `EnvWrapper` can build the env by name. Here the class itself is registered under its `name`; the
# alternative, `registrar.register("gather", "my_pkg.gather:Gather", run_config=...)`, registers it by
# import path instead (one of the two, not both). In your own package, the training command line finds the
# env without any registrar (`--env my_pkg.gather:Gather`, or `--import my_pkg` for a package that
# registers it on import: docs/config_reference.md, "Your own env"). The example envs shipped with
# WarpDrive are listed in `example_envs/__init__.py` (`get_example_env_class("tag_continuous")`).

# %%
from warp_drive.env import EnvironmentRegistrar

registrar = EnvironmentRegistrar()
registrar.add(cuda_env_src_path=str(CUDA_SOURCE))(Gather)  # or use @registrar.add(...) on the class

NUM_ENVS = 32
wrapper = EnvWrapper(env_name="gather", env_config={"num_agents": 8}, env_registrar=registrar,
                     num_envs=NUM_ENVS, env_backend=BACKEND)
print(type(wrapper.env).__name__, "with", wrapper.n_envs, "replicas on", BACKEND)

# %% [markdown]
# ## 7. Train it
#
# The env plugs straight into the `Trainer` (tutorial 5 explains the config): one policy `shared`
# for all agents, PPO, a few seconds of training. The return of a random policy is about -10; the
# agents learn to walk towards each other and end the episode early.

# %%
import matplotlib.pyplot as plt

from warp_drive.training.trainer import Trainer

config = {
    "name": "gather",
    "trainer": {"num_envs": NUM_ENVS, "train_batch_size": NUM_ENVS * 20, "num_episodes": NUM_ENVS * 13,
                "env_backend": BACKEND, "seed": 0},
    "policy": {"shared": {"to_train": True, "algorithm": "PPO", "lr": 0.003, "gamma": 0.95, "entropy_coeff": 0.01,
                          "vf_loss_coeff": 0.5, "num_minibatches": 2, "normalize_advantage": True,
                          "model": {"fc_dims": [32, 32]}}},
    "saving": {"metrics_log_freq": 1, "model_params_save_freq": 1000},
}
from warp_drive.training.run.metrics import read_metrics

trainer = Trainer(wrapper, config, results_dir=Path("runs/gather").resolve(), verbose=False)
before = trainer.evaluate(deterministic=False)["shared"]["episode_return"].mean()
trainer.train()
after = trainer.evaluate(deterministic=False)["shared"]["episode_return"].mean()
print(f"mean episode return: random policy {before:.2f}, after {trainer.num_iters} iterations {after:.2f}")

rows = [r for r in read_metrics(trainer.save_dir) if "shared/episode_return_mean" in r]
plt.figure(figsize=(5, 3))
plt.plot([r["timestep"] for r in rows], [r["shared/episode_return_mean"] for r in rows], marker=".")
plt.xlabel("env steps")
plt.ylabel("episode return (training)")
plt.title("Gather")
plt.show()

# %% [markdown]
# ## Summary: the file set of a new env
#
# In your package (or in this repository's `example_envs/`) the pieces above become one folder (see
# [docs/adding_an_env.md](../docs/adding_an_env.md) for the full guide and its danger boxes):
#
# ```
# my_pkg/gather/
#   __init__.py
#   constants.py        # OBS_DIM, NUM_ACTIONS, defaults: one source for Python and cuda_constants()
#   gather.py           # Gather: the NumPy reference (observe, gather_step) and the class
#   gather_step.cu      # CudaGatherStep, mirroring gather.py
#   run_config.yaml     # a training config (name: my_pkg.gather.gather:Gather)
#   cpu_sized.yaml      # optional: settings for a quick run on the cpu backend
#   README.md           # rules, observation layout, reward table, tolerances
# ```
#
# plus a consistency test (`EnvironmentCPUvsGPU`) in the GPU test suite.
#
# Next: [tutorial 5](05_training.ipynb), training with the `Trainer`.
