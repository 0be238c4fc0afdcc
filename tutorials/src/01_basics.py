# %% [markdown]
# # Tutorial 1: the data store and your first kernel
#
# WarpDrive keeps the whole reinforcement-learning loop on the GPU. Two managers make that work:
#
# * a **data manager** owns every array by name: environment state, observations, actions,
#   rewards. There is one copy of each array, and both your CUDA kernels and PyTorch read and write
#   it in place;
# * a **function manager** compiles CUDA C code (with `nvcc`, cached by content), loads the kernels
#   and launches them with arguments bound by data name.
#
# This tutorial pushes a few arrays, writes a first kernel, and shows that PyTorch and the kernel
# share memory. Everything except the kernel compilation also runs without a GPU, on the `cpu`
# backend, where the same data-store API holds NumPy-backed torch tensors.
#
# Cells tagged **gpu** (in the cell's metadata) need a CUDA GPU; they check the backend first and do
# nothing on a CPU runtime.

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
# ## 1. A data manager
#
# A data manager is sized by three numbers: the number of environment replicas `num_envs` (E), the
# agents per environment `num_agents` (N) and the episode length (T). On the GPU it is a
# `PyCUDADataManager`; on the CPU a `CPUDataManager`. Both have the same methods.

# %%
import numpy as np

from warp_drive.env import DataFeed
from warp_drive.managers.data_manager import CPUDataManager

NUM_ENVS, NUM_AGENTS, EPISODE_LENGTH = 3, 4, 10

if BACKEND == "pycuda":
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager

    dm = PyCUDADataManager(num_agents=NUM_AGENTS, num_envs=NUM_ENVS, episode_length=EPISODE_LENGTH)
else:
    dm = CPUDataManager(num_agents=NUM_AGENTS, num_envs=NUM_ENVS, episode_length=EPISODE_LENGTH)

print(type(dm).__name__, "on", dm.device)
print("arrays the framework creates itself:", dm.names())
print("meta information:", {name: dm.meta_info(name) for name in ("n_envs", "n_agents", "episode_length")})

# %% [markdown]
# `_done_` and `_timestep_` (one entry per env) are reserved: every environment reports its done
# flag and time step there, and the reset machinery of tutorial 3 reads them.
#
# ## 2. Pushing data with a `DataFeed`
#
# A `DataFeed` is a dict of named arrays plus flags. `save_copy_and_apply_at_reset=True` keeps a
# copy that is restored when an env is reset (tutorial 3).
#
# Only 32-bit data crosses to the device: `float64` is cast to `float32` and `int64` to `int32`;
# any other dtype is refused with a message that says which cast to apply.

# %%
rng = np.random.default_rng(0)
start = rng.uniform(0.0, 1.0, size=(NUM_ENVS, NUM_AGENTS)).astype(np.float32)

feed = DataFeed()
feed.add_data("position", start, save_copy_and_apply_at_reset=True)
feed.add_data("velocity", np.zeros((NUM_ENVS, NUM_AGENTS)))  # float64: cast to float32
feed.add_data("dt", 0.1)  # a scalar: passed to kernels by value
dm.push_data_to_device(feed, torch_accessible=True)

for name in ("position", "velocity", "dt"):
    print(f"{name:9s} shape={dm.get_shape(name)} dtype={dm.get_dtype(name)}")

# %%
from warp_drive.errors import DataNotFoundError, DataTypeError

try:
    dm.push_data_to_device({"alive": np.ones(NUM_ENVS, dtype=bool)})
except DataTypeError as err:
    print("refused:", err)

try:
    dm.pull_data_from_device("speed")
except DataNotFoundError as err:
    print("unknown name:", err)

# %% [markdown]
# ## 3. Reading data back: a copy or the live tensor
#
# * `pull_data_from_device(name)` returns a **host copy** (a NumPy array);
# * `data_on_device_via_torch(name)` returns the **live tensor** itself: writing to it changes what
#   every kernel sees, with no copy in between.

# %%
position = dm.data_on_device_via_torch("position")
print(position.device, position.dtype, tuple(position.shape))

snapshot = dm.pull_data_from_device("position")
position += 1.0  # in place, on the device
print("snapshot unchanged:", np.allclose(snapshot, start))
print("store changed:     ", np.allclose(dm.pull_data_from_device("position"), start + 1.0))

dm.reset_device("position")  # re-upload the values originally pushed
print("restored:          ", np.allclose(dm.pull_data_from_device("position"), start))

# %% [markdown]
# ## 4. A first CUDA kernel
#
# Kernels are CUDA C functions declared `extern "C" __global__`. WarpDrive launches **one block per
# env replica and one thread per agent**, and prepends a small prelude to your code with the launch
# sizes as compile-time constants (`wkNumberEnvs`, `wkNumberAgents`, `wkBlocksPerEnv`) and index
# helpers:
#
# * `wkEnvId()`: the env of the calling thread's block;
# * `wkAgentId()`: the agent of the calling thread.
#
# Arrays of shape (E, N) are stored row major, so agent `a` of env `e` sits at
# `e * wkNumberAgents + a`. Always guard the body with `if (agent < wkNumberAgents)`: the block can
# have more threads than agents.

# %%
MOVE_KERNEL = r"""
extern "C" __global__ void cuda_move(float* position, const float* velocity, float dt) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (agent < wkNumberAgents) {
    const int i = env * wkNumberAgents + agent;
    position[i] += velocity[i] * dt;
  }
}
"""

# %% [markdown]
# `PyCUDAFunctionManager.load_cuda_from_source_code` renders the prelude, the core service layer
# (random numbers, sampler, resets, logs: tutorials 2 and 3) and your code into one translation
# unit, compiles it for this GPU (the binary is cached by content in `$WARP_DRIVE_CACHE_DIR`, so the
# second run does not call nvcc) and loads it.

# %% tags=["gpu"]
if BACKEND == "pycuda":
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    fm = PyCUDAFunctionManager(num_agents=NUM_AGENTS, num_envs=NUM_ENVS)
    fm.load_cuda_from_source_code(MOVE_KERNEL)
    fm.initialize_functions(["cuda_move"])
    print("compiled for", fm.arch, "- launch geometry: grid", fm.grid, "block", fm.block)

# %% [markdown]
# On the `cpu` backend a "kernel" is a NumPy function with the same name and arguments: arrays
# arrive as NumPy views of the store (written in place), scalars by value. The function manager
# launches it with the same call.

# %%
from warp_drive.managers.function_manager import CPUFunctionManager, FunctionFeed


def cuda_move(position: np.ndarray, velocity: np.ndarray, dt: np.float32) -> None:
    """NumPy twin of the CUDA kernel above (whole arrays at once)."""
    position += velocity * dt


if BACKEND == "cpu":
    fm = CPUFunctionManager(num_agents=NUM_AGENTS, num_envs=NUM_ENVS)
    fm.register_function("cuda_move", cuda_move)
    fm.initialize_functions(["cuda_move"])

print(type(fm).__name__, "functions:", fm.function_names)

# %% [markdown]
# ## 5. Launching with arguments bound by name
#
# A `FunctionFeed` turns data names into kernel arguments: arrays become their tensors (a device
# pointer on the GPU), scalars their values. `("episode_length", "meta")` would pick a meta value.

# %%
feed_args = FunctionFeed(dm)
velocity = dm.data_on_device_via_torch("velocity")
velocity.fill_(2.0)  # written by torch ...

fm.launch("cuda_move", feed_args(["position", "velocity", "dt"]))  # ... read by the kernel

expected = start + 2.0 * np.float32(0.1)
np.testing.assert_allclose(dm.pull_data_from_device("position"), expected, rtol=1e-6)
print("position after one launch:\n", dm.pull_data_from_device("position"))

# %% [markdown]
# ## 6. Torch and kernels share memory
#
# The tensor you got from `data_on_device_via_torch` *is* the kernel's array: a kernel launch
# changes it in place, and its storage is the one the kernel receives. On the GPU the kernel gets
# `tensor.data_ptr()`; on the CPU the NumPy view and the tensor share one buffer.

# %%
before = position.clone()
fm.launch("cuda_move", feed_args(["position", "velocity", "dt"]))
print("the live tensor moved by", float((position - before).mean()), "without a copy")

if BACKEND == "cpu":
    view = dm.host_view()["position"]  # what CPU kernels receive
    print("NumPy view and torch tensor share memory:", np.shares_memory(view, position.numpy()))

# %% [markdown]
# On the GPU we can check the pointer directly: the tensor's address is the argument passed to the
# kernel.

# %% tags=["gpu"]
if BACKEND == "pycuda":
    arg = feed_args(["position", "velocity", "dt"])[0]
    print("same storage:", arg.data_ptr() == position.data_ptr(), hex(position.data_ptr()))

# %% [markdown]
# ## 7. Arguments are checked before the first launch
#
# A kernel that receives its arguments in the wrong order computes garbage silently. WarpDrive
# parses the kernel's signature from the source and checks a data-name argument list against it:
# count, pointer or scalar, float or int, and names that appear at another position.

# %% tags=["gpu"]
if BACKEND == "pycuda":
    from warp_drive.errors import KernelSignatureError

    fm.check_arguments("cuda_move", ["position", "velocity", "dt"], dm)  # fine
    try:
        fm.check_arguments("cuda_move", ["velocity", "position", "dt"], dm)
    except KernelSignatureError as err:
        print("caught:", err)

# %% [markdown]
# The parser is plain Python, so you can inspect a kernel's parameters on any machine:

# %%
from warp_drive.cuda.signature import parse_kernel_signatures

for param in parse_kernel_signatures(MOVE_KERNEL)["cuda_move"]:
    print(f"{param.ctype:6s} {'*' if param.is_pointer else ' '} {param.name}")

# %% [markdown]
# ## Summary
#
# * `DataFeed` + `push_data_to_device`: named 32-bit arrays and scalars, pushed once.
# * `data_on_device_via_torch`: the live tensor; `pull_data_from_device`: a host copy.
# * `load_cuda_from_source_code` / `initialize_functions` / `launch`: your kernels, with arguments
#   bound by name through a `FunctionFeed`.
#
# Next: [tutorial 2](02_sampler.ipynb) samples actions inside a kernel, and
# [tutorial 3](03_reset_and_log.ipynb) resets envs and logs episodes on the device.
