# %% [markdown]
# # Tutorial 2: sampling actions on the device
#
# A policy network outputs action probabilities for every agent of every env replica. WarpDrive's
# `Sampler` draws the actions **inside a kernel**, straight into the `sampled_actions` array that
# the environment's step kernel reads: no copy to the host, no Python loop over agents.
#
# Random numbers come from Philox4x32-10, a counter-based generator: a draw is a pure function of
# (seed, action head, row, call count), so there is no per-thread generator state to allocate, and
# the CPU backend reproduces the GPU's categorical draws bit for bit.
#
# You will: register an action array, sample, compare frequencies with probabilities, take the
# argmax, sample several action heads and Gaussian actions, and (on a GPU) time the sampler against
# `torch.multinomial`.

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
# ## 1. Managers for the chosen backend
#
# The sampler only needs the core service kernels. On the GPU we compile a module with no user code
# (`load_cuda_from_source_code("")`); on the CPU the core functions are NumPy twins.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

from warp_drive.managers.data_manager import CPUDataManager
from warp_drive.managers.function_manager import CPUFunctionManager


def make_managers(num_envs: int, num_agents: int, backend: str = BACKEND, episode_length: int = 10):
    """A (data manager, function manager) pair with the core kernels loaded."""
    if backend == "pycuda":
        from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
        from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

        dm = PyCUDADataManager(num_agents=num_agents, num_envs=num_envs, episode_length=episode_length)
        fm = PyCUDAFunctionManager(num_agents=num_agents, num_envs=num_envs)
        fm.load_cuda_from_source_code("")  # just the core service layer
    else:
        dm = CPUDataManager(num_agents=num_agents, num_envs=num_envs, episode_length=episode_length)
        fm = CPUFunctionManager(num_agents=num_agents, num_envs=num_envs)
        fm.initialize_default_functions()
    return dm, fm


NUM_ENVS, NUM_AGENTS, NUM_ACTIONS = 200, 5, 4
dm, fm = make_managers(NUM_ENVS, NUM_AGENTS)
DEVICE = dm.device
print(type(dm).__name__, DEVICE)

# %% [markdown]
# ## 2. The action placeholder and the sampler
#
# Actions live in an int32 array of shape (num_envs, num_agents, num_heads): one column per action
# head (a `Discrete` space has one head, a `MultiDiscrete([a, b])` space two). An `EnvWrapper`
# creates `sampled_actions` for you; here we push it by hand.
#
# `init_random(seed)` sets the seed (and restarts every counter); `register_actions` declares how
# many choices each head has.

# %%
from warp_drive.services.sampler import Sampler

dm.push_data_to_device({"sampled_actions": np.zeros((NUM_ENVS, NUM_AGENTS, 1), np.int32)}, torch_accessible=True)

sampler = Sampler(fm)
sampler.init_random(seed=42)
sampler.register_actions(dm, "sampled_actions", num_actions=NUM_ACTIONS)

# %% [markdown]
# The probabilities are a float32 tensor of shape (num_envs, num_agents, num_actions) on the same
# device, typically the softmax output of a policy. Here every agent gets its own distribution,
# shared by all env replicas.

# %%
generator = torch.Generator().manual_seed(0)
per_agent = torch.softmax(1.5 * torch.randn(NUM_AGENTS, NUM_ACTIONS, generator=generator), dim=-1)
probs = per_agent.expand(NUM_ENVS, NUM_AGENTS, NUM_ACTIONS).contiguous().to(DEVICE)

sampler.sample(dm, probs, "sampled_actions")
actions = dm.data_on_device_via_torch("sampled_actions")
print("actions", tuple(actions.shape), actions.dtype)
print("env 0:", actions[0, :, 0].tolist())

# %% [markdown]
# ## 3. Frequencies match probabilities
#
# Each call draws a fresh action per (env, agent) row. Over 100 calls, that is 20,000 draws per
# agent.

# %%
counts = torch.zeros(NUM_AGENTS, NUM_ACTIONS, device=DEVICE)
for _ in range(100):
    sampler.sample(dm, probs, "sampled_actions", check=False)
    counts += torch.nn.functional.one_hot(actions[..., 0].long(), NUM_ACTIONS).sum(0)
sampler.check()  # raise if any of those calls saw invalid probabilities
frequencies = (counts / counts.sum(-1, keepdim=True)).cpu()
print("largest |frequency - probability|:", float((frequencies - per_agent).abs().max()))

# %%
fig, axes = plt.subplots(1, NUM_AGENTS, figsize=(3 * NUM_AGENTS, 2.8), sharey=True)
x = np.arange(NUM_ACTIONS)
for agent, ax in enumerate(axes):
    ax.bar(x - 0.2, per_agent[agent].numpy(), width=0.4, label="probability")
    ax.bar(x + 0.2, frequencies[agent].numpy(), width=0.4, label="frequency")
    ax.set_title(f"agent {agent}")
    ax.set_xticks(x)
    ax.set_xlabel("action")
axes[0].legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Greedy actions, reproducibility and bad inputs
#
# `use_argmax=True` takes the most probable action (the first one on ties), e.g. for evaluation.

# %%
sampler.sample(dm, probs, "sampled_actions", use_argmax=True)
assert torch.equal(actions[..., 0].long(), probs.argmax(-1))
print("argmax actions of env 0:", actions[0, :, 0].tolist())

# %% [markdown]
# The same seed gives the same actions: `init_random` restarts the counters.

# %%
def draw(seed: int) -> torch.Tensor:
    sampler.init_random(seed)
    sampler.sample(dm, probs, "sampled_actions")
    return actions.clone()


print("same seed, same actions:      ", torch.equal(draw(7), draw(7)))
print("other seed, different actions:", not torch.equal(draw(7), draw(8)))

# %% [markdown]
# The sampler checks its input inside the kernel (NaN, negative values, rows not summing to 1) and
# raises a `SamplerError` that names the first bad row. In a training loop pass `check=False` and
# call `sampler.check()` once per iteration: reading the flag costs a device synchronization.

# %%
from warp_drive.errors import SamplerError

bad = probs.clone()
bad[3, 2] = torch.tensor([0.5, 0.5, 0.5, float("nan")])
try:
    sampler.sample(dm, bad, "sampled_actions")
except SamplerError as err:
    print(err)

# %% [markdown]
# On a GPU we can check the claim that the CPU backend draws exactly the GPU's actions: sample with
# the same seed on both backends and compare.

# %% tags=["gpu"]
if BACKEND == "pycuda":
    cpu_dm, cpu_fm = make_managers(NUM_ENVS, NUM_AGENTS, backend="cpu")
    cpu_dm.push_data_to_device({"sampled_actions": np.zeros((NUM_ENVS, NUM_AGENTS, 1), np.int32)}, torch_accessible=True)
    cpu_sampler = Sampler(cpu_fm)
    cpu_sampler.register_actions(cpu_dm, "sampled_actions", NUM_ACTIONS)
    cpu_sampler.init_random(123)
    sampler.init_random(123)
    for _ in range(10):
        sampler.sample(dm, probs, "sampled_actions")
        cpu_sampler.sample(cpu_dm, probs.cpu(), "sampled_actions")
        same = np.array_equal(dm.pull_data_from_device("sampled_actions"), cpu_dm.pull_data_from_device("sampled_actions"))
        assert same
    print("GPU and CPU drew identical actions in 10 calls:", same)

# %% [markdown]
# ## 5. Several action heads
#
# An agent with a `MultiDiscrete([a, b])` action space (e.g. Tag's acceleration and turn) has two
# heads: two columns in the action array, each sampled from its own distribution with `head=`.
# Every head has its own random stream.

# %%
dm.push_data_to_device({"two_head_actions": np.zeros((NUM_ENVS, NUM_AGENTS, 2), np.int32)}, torch_accessible=True)
sampler.register_actions(dm, "two_head_actions", num_actions=NUM_ACTIONS)

accelerate = torch.full((NUM_ENVS, NUM_AGENTS, NUM_ACTIONS), 1.0 / NUM_ACTIONS, device=DEVICE)
turn = torch.zeros_like(accelerate)
turn[..., 1] = 1.0  # always action 1
sampler.sample(dm, accelerate, "two_head_actions", head=0)
sampler.sample(dm, turn, "two_head_actions", head=1)
two = dm.data_on_device_via_torch("two_head_actions")
print("head 0 (uniform):", two[0, :, 0].tolist(), " head 1 (always 1):", two[0, :, 1].tolist())

# %% [markdown]
# ## 6. Continuous (Gaussian) actions
#
# For a `Box` action space the action array is float32 with one column per action dimension, and
# `sample_gaussian` draws `mean + std * N(0, 1)` (Box-Muller on Philox numbers). Register it with
# `is_deterministic=True` (the name the reference API uses for Gaussian heads).

# %%
dm.push_data_to_device({"torques": np.zeros((NUM_ENVS, NUM_AGENTS, 1), np.float32)}, torch_accessible=True)
sampler.register_actions(dm, "torques", num_actions=1, is_deterministic=True)

mean = torch.full((NUM_ENVS, NUM_AGENTS, 1), 0.5, device=DEVICE)
std = torch.full_like(mean, 0.2)
draws = []
for _ in range(20):
    sampler.sample_gaussian(dm, mean, std, "torques")
    draws.append(dm.pull_data_from_device("torques").ravel())
draws = np.concatenate(draws)
print(f"{draws.size} draws: mean {draws.mean():.3f} (0.5), std {draws.std():.3f} (0.2)")

grid = np.linspace(-0.3, 1.3, 200)
plt.figure(figsize=(5, 3))
plt.hist(draws, bins=50, density=True, alpha=0.6, label="sampled")
plt.plot(grid, np.exp(-0.5 * ((grid - 0.5) / 0.2) ** 2) / (0.2 * np.sqrt(2 * np.pi)), label="N(0.5, 0.2²)")
plt.legend()
plt.title("Gaussian actions")
plt.show()

# %% [markdown]
# ## 7. Speed: in-kernel sampling vs `torch.multinomial` (GPU)
#
# One launch samples every row. We time it against `torch.multinomial` and
# `torch.distributions.Categorical` on the same probabilities, with CUDA events after a warm-up.
# `benchmarks/bench_sampler.py` in the repository runs the full comparison (also inside a CUDA
# graph, as the trainer does).

# %% tags=["gpu"]
if BACKEND == "pycuda":
    E, N, A, REPS = 1000, 100, 20, 200
    big_dm, big_fm = make_managers(E, N)
    big_dm.push_data_to_device({"sampled_actions": np.zeros((E, N, 1), np.int32)}, torch_accessible=True)
    big_sampler = Sampler(big_fm)
    big_sampler.init_random(0)
    big_sampler.register_actions(big_dm, "sampled_actions", A)
    big_probs = torch.softmax(torch.randn(E, N, A, device="cuda"), dim=-1)
    flat = big_probs.view(-1, A)

    def microseconds(fn) -> float:
        for _ in range(10):
            fn()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(REPS):
            fn()
        stop.record()
        torch.cuda.synchronize()
        return 1000.0 * start.elapsed_time(stop) / REPS

    timings = {
        "warp_drive Sampler": microseconds(lambda: big_sampler.sample(big_dm, big_probs, "sampled_actions", check=False)),
        "torch.multinomial": microseconds(lambda: torch.multinomial(flat, 1)),
        "torch Categorical": microseconds(lambda: torch.distributions.Categorical(probs=big_probs).sample()),
    }
    big_sampler.check()
    for name, us in timings.items():
        print(f"{name:20s} {us:8.1f} us per call ({E * N:,} rows x {A} actions)")
    plt.figure(figsize=(5, 2.5))
    plt.barh(list(timings), list(timings.values()))
    plt.xlabel("microseconds per call (lower is better)")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# ## Summary
#
# * `Sampler(function_manager)`, `init_random(seed)`, `register_actions(dm, name, num_actions)`.
# * `sample(dm, probs, name, head=h)` draws into the action array in place; `use_argmax=True` for
#   greedy actions; `sample_gaussian(dm, mean, std, name)` for `Box` actions.
# * Invalid probabilities raise a `SamplerError`; use `check=False` in hot loops and `check()` once.
#
# Next: [tutorial 3](03_reset_and_log.ipynb), resets and episode logs on the device.
