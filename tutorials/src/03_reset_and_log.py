# %% [markdown]
# # Tutorial 3: resets and episode logs on the device
#
# Thousands of env replicas finish their episodes at different times. Copying them to the host to
# reset them would undo the point of running on the GPU, so WarpDrive resets **on the device, in one
# kernel launch**:
#
# * every array pushed with `save_copy_and_apply_at_reset=True` is restored from its saved copy;
# * every array with a **reset pool** gets one row of its pool, drawn per env (so replicas can start
#   from different states);
# * the env's `_done_` flag and `_timestep_` are cleared.
#
# `EnvironmentReset` does this for the envs whose done flag is set (`mode="if_done"`) or for all of
# them (`mode="force_reset"`). `LogController` records arrays of one env at every step of an
# episode, on the device, for plots and animations.

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
import matplotlib.pyplot as plt
import numpy as np
import torch

from warp_drive.env import DataFeed
from warp_drive.managers.data_manager import CPUDataManager
from warp_drive.managers.function_manager import CPUFunctionManager


def make_managers(num_envs: int, num_agents: int, episode_length: int):
    """A (data manager, function manager) pair with the core kernels loaded."""
    if BACKEND == "pycuda":
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


# %% [markdown]
# ## 1. State with a saved copy and state with a reset pool
#
# Six env replicas with three agents each. `energy` starts at 10 and is restored from its saved
# copy. `start_x` and `start_y` are reset from pools of five rows: at each reset every env draws one
# row index, shared by all pools of that env, so `x` and `y` of one starting layout stay together.
# Here pool row `p` holds `x = p` and `y = 10 p`.
#
# Arrays that are reset need a leading env axis (E, ...). An `EnvWrapper` adds it for you; here we
# build the arrays with it.

# %%
NUM_ENVS, NUM_AGENTS, EPISODE_LENGTH, POOL_SIZE = 6, 3, 5, 5
dm, fm = make_managers(NUM_ENVS, NUM_AGENTS, EPISODE_LENGTH)

rows = np.arange(POOL_SIZE, dtype=np.float32)[:, None].repeat(NUM_AGENTS, axis=1)  # (P, N)
feed = DataFeed()
feed.add_data("energy", np.full((NUM_ENVS, NUM_AGENTS), 10.0, np.float32), save_copy_and_apply_at_reset=True)
feed.add_data("start_x", np.zeros((NUM_ENVS, NUM_AGENTS), np.float32))
feed.add_data("start_y", np.zeros((NUM_ENVS, NUM_AGENTS), np.float32))
feed.add_pool_for_reset("start_x_pool", rows, reset_target="start_x")
feed.add_pool_for_reset("start_y_pool", 10 * rows, reset_target="start_y")
dm.push_data_to_device(feed, torch_accessible=True)

print("restored from a saved copy:", dm.reset_data_list)
print("reset from a pool:         ", dm.reset_target_to_pool)

# %% [markdown]
# ## 2. Reset only the envs that are done
#
# Let three steps pass in every env (energy drops, time advances), then mark envs 0 and 2 as done.

# %%
from warp_drive.services.environment_reset import EnvironmentReset

resetter = EnvironmentReset(fm)
resetter.init_reset_pool(dm, seed=0)  # seeds the pool draws

energy = dm.data_on_device_via_torch("energy")
done = dm.data_on_device_via_torch("_done_")
timestep = dm.data_on_device_via_torch("_timestep_")

energy -= 3.0
timestep += 3
done[[0, 2]] = 1

resetter.reset_when_done(dm, mode="if_done")

print("energy per env:  ", energy[:, 0].tolist())
print("timestep per env:", timestep.tolist())
print("done per env:    ", done.tolist())
print("start_x per env: ", dm.data_on_device_via_torch("start_x")[:, 0].tolist())
print("start_y per env: ", dm.data_on_device_via_torch("start_y")[:, 0].tolist())
assert energy[[0, 2]].eq(10).all() and energy[[1, 3, 4, 5]].eq(7).all()

# %% [markdown]
# Only envs 0 and 2 were restored, their done flags and time steps were cleared, and each drew
# a pool row for `start_x` and `start_y` (the same row for both).
#
# `mode="force_reset"` resets every env regardless of its flag (an `EnvWrapper` does this in
# `reset_all_envs()` after the first call). `undo_done_after_reset=False` restores the state but
# leaves the done flags set, e.g. when your own code still needs to see them.

# %%
energy -= 1.0
resetter.reset_when_done(dm, mode="force_reset")
print("after force_reset:", energy[:, 0].tolist())

done[1] = 1
energy -= 2.0
resetter.reset_when_done(dm, undo_done_after_reset=False)
print("env 1 restored:", energy[:, 0].tolist(), "- its done flag is still", int(done[1]))
done.zero_()

# %% [markdown]
# ## 3. How pool rows are drawn
#
# Each reset of env `e` draws a uniform row index from Philox numbers keyed by the pool seed, the
# env and that env's reset count: no generator state, identical draws on the CPU and the GPU. Over
# many resets every row is equally likely, and `x` and `y` always come from the same row.

# %%
draws = []
for _ in range(300):
    resetter.reset_when_done(dm, mode="force_reset")
    x = dm.pull_data_from_device("start_x")[:, 0]
    y = dm.pull_data_from_device("start_y")[:, 0]
    assert np.array_equal(y, 10 * x), "x and y rows must be aligned"
    draws.append(x.astype(int))
counts = np.bincount(np.concatenate(draws), minlength=POOL_SIZE)

plt.figure(figsize=(5, 2.8))
plt.bar(np.arange(POOL_SIZE), counts, label="resets")
plt.axhline(counts.sum() / POOL_SIZE, color="k", linestyle="--", label="uniform")
plt.xlabel("pool row")
plt.ylabel("times drawn")
plt.legend()
plt.title(f"{counts.sum()} pool draws ({NUM_ENVS} envs x 300 resets)")
plt.show()

# %% [markdown]
# ## 4. Logging an episode with `LogController`
#
# Arrays flagged `log_data_across_episode=True` (shape (E, N, ...)) get a log of shape
# (T + 1, N, ...) on the device. `reset_log(dm, env_id)` chooses the env and records step 0;
# `update_log(dm, t)` records step t; `fetch_log(dm)` returns `<name>_for_log` arrays.
#
# The Tag (continuous) example env logs `loc_x`, `loc_y` and `still_in_the_game`. Let's play one
# episode with uniformly random actions: the env steps on the backend, the sampler draws both
# action heads (acceleration and turn), and done envs are reset on the device.

# %%
from example_envs.tag_continuous.tag_continuous import TagContinuous
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.services.log_controller import LogController
from warp_drive.services.sampler import Sampler

env = TagContinuous(num_taggers=2, num_runners=10, grid_length=10.0, episode_length=100, seed=3,
                    tagging_distance=0.05, use_full_observation=False, num_other_agents_observed=4)
wrapper = EnvWrapper(env, num_envs=4, env_backend=BACKEND)
wrapper.reset_all_envs()
tag_dm, tag_fm = wrapper.cuda_data_manager, wrapper.cuda_function_manager
print("logged arrays:", tag_dm.log_data_list)

heads = env.action_space[0].nvec  # MultiDiscrete: [acceleration levels, turn levels]
sampler = Sampler(tag_fm)
sampler.init_random(0)
sampler.register_actions(tag_dm, "sampled_actions", num_actions=int(heads.max()))
uniform = [torch.full((4, env.num_agents, int(n)), 1.0 / int(n), device=tag_dm.device) for n in heads]

log = LogController(tag_fm)
log.reset_log(tag_dm, env_id=0)
for t in range(1, env.episode_length + 1):
    for head, probs in enumerate(uniform):
        sampler.sample(tag_dm, probs, "sampled_actions", head=head)
    wrapper.step_all_envs()
    log.update_log(tag_dm, t)
    if tag_dm.pull_data_from_device("_done_")[0]:
        break  # env 0 finished: its log ends here
    wrapper.reset_only_done_envs()

episode = log.fetch_log(tag_dm)
print({name: array.shape for name, array in episode.items()}, "- last step:", log.last_valid_step)

# %%
xs, ys = episode["loc_x_for_log"], episode["loc_y_for_log"]
alive = episode["still_in_the_game_for_log"].astype(bool)
is_tagger = env.is_tagger

fig, ax = plt.subplots(figsize=(5, 5))
for agent in range(env.num_agents):
    steps = alive[:, agent]
    color = "tab:red" if is_tagger[agent] else "tab:blue"
    ax.plot(xs[steps, agent], ys[steps, agent], color=color, alpha=0.7, linewidth=1)
    ax.plot(xs[0, agent], ys[0, agent], "o", color=color, markersize=4)
    if not steps.all():  # tagged: mark where it left the game
        last = np.argmin(steps) - 1
        ax.plot(xs[last, agent], ys[last, agent], "x", color="k")
ax.set_xlim(0, env.grid_length)
ax.set_ylim(0, env.grid_length)
ax.set_aspect("equal")
ax.set_title("env 0: taggers (red) and runners (blue); x = tagged")
plt.show()

# %% [markdown]
# Tutorial 5 turns such logs into an animated GIF with the env's render hook
# (`warp_drive.testing.rollout_animation`).
#
# ## Summary
#
# * `save_copy_and_apply_at_reset=True` and `DataFeed.add_pool_for_reset(name, pool, reset_target)`
#   declare what a reset restores; `EnvironmentReset.reset_when_done(dm, mode)` does it in one
#   launch (`EnvWrapper.reset_only_done_envs()` calls it).
# * `init_reset_pool(dm, seed)` seeds the pool draws; one row per env per reset, shared by all of
#   that env's pools.
# * `LogController`: `reset_log`, `update_log`, `fetch_log` for one env's episode.
#
# Next: [tutorial 4](04_custom_env.ipynb), writing your own environment.
