# %% [markdown]
# # Tutorial 6: scaling up (more envs, more agents, more GPUs)
#
# WarpDrive maps **one env replica to one CUDA block and one agent to one thread**. Scaling has
# three axes:
#
# 1. **more envs**: more blocks. Throughput grows until the GPU is full;
# 2. **more agents**: more threads per block, up to the device limit (1024). Beyond it an env spans
#    several blocks (`blocks_per_env`), and a step that needs every agent's new state is split into
#    phase kernels;
# 3. **more GPUs**: one process per GPU with `torchrun`, each with its own env replicas; gradients
#    are averaged with DistributedDataParallel.
#
# We measure the first, look at the geometry behind the second, estimate memory, read the
# repository's benchmarks, and launch multi-GPU training.

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

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from example_envs.tag_continuous.tag_continuous import TagContinuous
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.services.sampler import Sampler


def make_tag(num_envs: int, num_agents: int, backend: str = BACKEND, full_observation: bool = False,
             blocks_per_env=None) -> EnvWrapper:
    """A reset Tag (continuous) wrapper with about one tagger per ten runners."""
    taggers = max(1, num_agents // 11)
    env = TagContinuous(num_taggers=taggers, num_runners=num_agents - taggers, grid_length=20.0 * (num_agents / 110) ** 0.5,
                        episode_length=100, seed=1, use_full_observation=full_observation,
                        num_other_agents_observed=10, tagging_distance=0.02, max_acceleration=0.1,
                        min_acceleration=-0.1)
    wrapper = EnvWrapper(env, num_envs=num_envs, env_backend=backend, blocks_per_env=blocks_per_env)
    wrapper.reset_all_envs()
    return wrapper


def random_stepper(wrapper: EnvWrapper):
    """One env step with uniformly random actions: in-kernel sampling, step, reset of done envs."""
    dm, env = wrapper.cuda_data_manager, wrapper.env
    sampler = Sampler(wrapper.cuda_function_manager)
    sampler.init_random(0)
    heads = env.action_space[0].nvec
    sampler.register_actions(dm, "sampled_actions", int(heads.max()))
    probs = [torch.full((wrapper.n_envs, env.num_agents, int(n)), 1.0 / int(n), device=dm.device) for n in heads]

    def step() -> None:
        for head, p in enumerate(probs):
            sampler.sample(dm, p, "sampled_actions", head=head, check=False)
        wrapper.step_all_envs()
        wrapper.reset_only_done_envs()

    return step


def env_steps_per_second(wrapper: EnvWrapper, steps: int) -> float:
    step = random_stepper(wrapper)
    step()  # warm-up
    if BACKEND == "pycuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if BACKEND == "pycuda":
        torch.cuda.synchronize()
    return wrapper.n_envs * steps / (time.perf_counter() - start)


# %% [markdown]
# ## 1. More envs
#
# Tag with 55 agents (5 taggers, 50 runners, each observing its 10 nearest neighbours), random
# actions, for a growing number of env replicas. On a GPU the steps per second grow almost linearly
# until the device is saturated; on a CPU the NumPy step is vectorised over envs, so it also gains,
# but much less.

# %%
NUM_AGENTS = 55
env_counts = [1, 10, 100, 1000, 10000] if BACKEND == "pycuda" else [1, 10, 100]
steps = 100 if BACKEND == "pycuda" else 10
throughput = {}
for num_envs in env_counts:
    throughput[num_envs] = env_steps_per_second(make_tag(num_envs, NUM_AGENTS), steps)
    print(f"{num_envs:6d} envs: {throughput[num_envs]:12,.0f} env steps/s "
          f"({throughput[num_envs] * NUM_AGENTS:14,.0f} agent steps/s)")

plt.figure(figsize=(5, 3.2))
plt.loglog(list(throughput), list(throughput.values()), marker="o")
plt.xlabel("env replicas")
plt.ylabel("env steps per second")
plt.title(f"Tag, {NUM_AGENTS} agents, {BACKEND} backend")
plt.grid(True, which="both", alpha=0.3)
plt.show()

# %% [markdown]
# ## 2. More agents: blocks, threads and `blocks_per_env`
#
# The launch geometry is `grid = num_envs * blocks_per_env` blocks of
# `block = ceil(num_agents / blocks_per_env)` threads. Inside a kernel:
#
# * `wkEnvId()` = `blockIdx.x / wkBlocksPerEnv`
# * `wkAgentId()` = `threadIdx.x + (blockIdx.x % wkBlocksPerEnv) * blockDim.x`
#
# and threads with `wkAgentId() >= wkNumberAgents` must do nothing. The function manager computes
# the geometry (no GPU needed):

# %%
from warp_drive.managers.function_manager import CPUFunctionManager

for num_envs, num_agents, blocks_per_env in [(1000, 110, 1), (10, 1024, 1), (10, 2000, 2), (10, 2000, 4), (2, 5, 2)]:
    fm = CPUFunctionManager(num_agents=num_agents, num_envs=num_envs, blocks_per_env=blocks_per_env)
    idle = fm.grid[0] * fm.block[0] - num_envs * num_agents
    print(f"E={num_envs:5d} N={num_agents:5d} blocks_per_env={blocks_per_env}: grid={fm.grid[0]:6d} blocks x "
          f"{fm.block[0]:4d} threads ({idle} idle threads)")

# %% [markdown]
# The index mapping for the smallest case, 2 envs of 5 agents with 2 blocks per env (3 threads per
# block), computed the way the kernel does:

# %%
E, N, BPE = 2, 5, 2
threads = -(-N // BPE)
print("block thread -> env agent")
for block in range(E * BPE):
    for thread in range(threads):
        env_id, agent_id = block // BPE, thread + (block % BPE) * threads
        note = "" if agent_id < N else "   idle: agent >= wkNumberAgents"
        print(f"{block:5d} {thread:6d} -> {env_id:3d} {agent_id:5d}{note}")

# %% [markdown]
# A CUDA block can hold at most 1024 threads, so an env with more agents needs `blocks_per_env > 1`.
# `EnvWrapper` picks `ceil(num_agents / 1024)` by default (pass `blocks_per_env=` to choose more).
#
# The blocks of one env cannot wait for each other inside a kernel (`__syncthreads()` only covers a
# block). An env whose step needs every agent's *new* state, such as Tag, where observations and
# tags use all the moved positions, splits its step into **phase kernels** launched in order: the
# kernel boundary is the barrier. Tag overrides `cuda_step_kernel`:

# %%
import inspect

print(inspect.getsource(TagContinuous.cuda_step_kernel))

# %% [markdown]
# On a GPU: one Tag env with 2000 agents (more than one block can hold), with 2, 4 and 8 blocks
# per env.

# %% tags=["gpu"]
if BACKEND == "pycuda":
    for blocks_per_env in (2, 4, 8):
        big = make_tag(num_envs=4, num_agents=2000, blocks_per_env=blocks_per_env)
        rate = env_steps_per_second(big, steps=50)
        print(f"2000 agents, blocks_per_env={blocks_per_env}: {rate * 2000:14,.0f} agent steps/s "
              f"(block of {big.cuda_function_manager.block[0]} threads)")

# %% [markdown]
# ## 3. How much memory?
#
# Every array of the store lives on the device, and arrays restored at reset keep a second copy.
# Memory grows with envs x agents x observation size, and full observation (every agent sees every
# other agent) grows with the square of the agents. A quick estimate from one replica, built on the
# CPU (sizes are the same on both backends):

# %%
def megabytes_per_env(wrapper: EnvWrapper) -> float:
    dm = wrapper.cuda_data_manager
    arrays = [n for n in dm.names() if n not in dm.scalar_data_list]
    words = sum(int(np.prod(dm.get_shape(n))) for n in arrays)
    words += sum(int(np.prod(dm.get_shape(n))) for n in dm.reset_data_list)  # saved copies
    return 4 * words / dm.num_envs / 2**20


print(f"{'agents':>6s} {'observation':>12s} {'MB per env':>11s} {'GB for 2000 envs':>17s}")
for num_agents in (110, 1000):
    for full in (False, True):
        mb = megabytes_per_env(make_tag(1, num_agents, backend="cpu", full_observation=full))
        print(f"{num_agents:6d} {'full' if full else 'K = 10':>12s} {mb:11.2f} {mb * 2000 / 1024:17.2f}")

# %% [markdown]
# ## 4. The benchmarks
#
# The repository's `benchmarks/` folder measures the claims (on a GPU; each script asserts that it
# did the work before it reports, and writes JSON with the GPU, driver and commit to
# `benchmarks/results/`):
#
# | script | measures |
# |---|---|
# | `bench_env_step.py` | env steps/s of Tag (sampling + step + reset), eager and in a CUDA graph, over a grid of envs x agents |
# | `bench_sampler.py` | the in-kernel sampler vs `torch.multinomial` and `Categorical` |
# | `bench_end_to_end.py` | training throughput of the `Trainer` on Tag configs, phase by phase |
# | `learning_proof.py` | CartPole and Tag learn (returns over time) |
# | `run_all.sh` | all of the above in one job |
#
# ```bash
# cd benchmarks && python bench_env_step.py --steps 200
# ```
#
# In a clone, the committed results can be plotted directly. They are found from the notebook's
# working directory (the clone's `tutorials/` folder, or any folder inside the clone) by walking
# up to the repository root, or next to the package when it was installed from the clone in
# editable mode (`pip install -e .`):

# %%
import json
from pathlib import Path

import warp_drive


def find_benchmark_results(start=None):
    """The clone's ``benchmarks/results`` folder: in ``start`` (default: the working directory) or
    a folder above it, else next to the imported package; None when there is none."""
    here = (start or Path.cwd()).resolve()
    package_root = Path(warp_drive.__file__).resolve().parents[1]
    for folder in (here, *here.parents, package_root):
        if (folder / "benchmarks" / "results").is_dir():
            return folder / "benchmarks" / "results"
    return None


results = find_benchmark_results()
files = sorted(results.glob("env_step_*.json")) if results is not None else []
if results is None:
    print(f"no benchmark results found: no benchmarks/results folder in {Path.cwd()}, the folders above it, "
          f"or next to the installed package ({Path(warp_drive.__file__).parent}). They ship with a clone of "
          "this repository, not with the wheel: run this notebook from inside a clone.")
elif not files:
    print(f"{results} holds no env_step_*.json results (written by benchmarks/bench_env_step.py on a GPU)")
for path in files:
    doc = json.loads(path.read_text())
    rows = [r for r in doc["rows"] if "graph_env_steps_per_s" in r]
    gpu = doc["environment"].get("cuda_device")
    plt.figure(figsize=(5, 3.2))
    for agents in sorted({r["agents"] for r in rows}):
        sel = sorted((r for r in rows if r["agents"] == agents), key=lambda r: r["envs"])
        plt.loglog([r["envs"] for r in sel], [r["graph_agent_steps_per_s"] for r in sel], marker="o",
                   label=f"{agents} agents")
    plt.xlabel("env replicas")
    plt.ylabel("agent steps per second")
    plt.title(f"{path.name}: Tag on {gpu}")
    plt.legend()
    plt.grid(True, which="both", alpha=0.3)
    plt.show()

# %% [markdown]
# ## 5. More GPUs
#
# `torchrun` starts one process per GPU. Each process builds its own env replicas and data store on
# its own GPU, samples with its own seeds, and wraps the models in DistributedDataParallel: the
# gradients are averaged over processes (NCCL), so every process applies the same update. Rank 0
# writes the metrics (averaged over ranks) and the checkpoints. `trainer.num_envs` is per process,
# so N GPUs run N times the env replicas.
#
# ```bash
# torchrun --standalone --nproc_per_node 4 -m warp_drive.training.example_training_script \
#     --env tag_continuous trainer.num_envs=500 trainer.train_batch_size=50000
# # the same, started by the script itself:
# python -m warp_drive.training.example_training_script --env tag_continuous --num_gpus 4
# ```
#
# Several machines: the same command on each node, with `--nnodes`, `--node_rank` and a rendezvous
# endpoint (see `warp_drive/training/distributed.py`). Without GPUs, `--backend cpu` runs the same
# multi-process training on the CPU with the gloo backend.
#
# The cell below runs a short job when this machine has at least two GPUs:

# %%
NUM_GPUS = torch.cuda.device_count() if BACKEND == "pycuda" else 0
if NUM_GPUS >= 2:
    # !torchrun --standalone --nproc_per_node {NUM_GPUS} -m warp_drive.training.example_training_script --env tag_continuous --quiet --results_dir runs/ddp trainer.num_envs=100 trainer.train_batch_size=10000 trainer.num_episodes=200
    print("see runs/ddp/metrics.jsonl")
else:
    print(f"{NUM_GPUS} GPU(s) here: multi-GPU training needs at least 2 (the command above shows how)")

# %% [markdown]
# ## Summary
#
# * More envs: more blocks; watch throughput saturate, then grow the batch instead.
# * More than 1024 agents: `blocks_per_env` (automatic in `EnvWrapper`), with phase kernels where a
#   step needs every agent's new state.
# * Memory: envs x agents x observation size, twice for arrays restored at reset; prefer partial
#   observation at scale.
# * More GPUs: `torchrun --nproc_per_node N -m warp_drive.training.example_training_script ...`.
#
# Next: [tutorial 7](07_lightning.ipynb), the same training driven by PyTorch Lightning.
