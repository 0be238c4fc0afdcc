# %% [markdown]
# # Tutorial 5: training with the `Trainer`
#
# The `Trainer` runs A2C or PPO end to end on the data store: each iteration rolls out
# `train_batch_size / num_envs` steps in every env replica (policy forward pass, in-kernel action
# sampling, env step, reset of done envs) and then updates the policies from the batch, without
# copying anything to the host. The same code runs on the `cpu` backend.
#
# This tutorial trains CartPole (one agent per env) from its bundled run config, plots the learning
# curve, evaluates, saves and resumes a checkpoint, and then trains Tag (continuous) with two
# policies, taggers and runners, and renders an episode as a GIF.

# %% tags=["install"]
# Install warp_drive from a clone of its repository (the package is not on PyPI), with the CUDA
# and plotting extras. Jupyter runs this notebook in tutorials/, so ".." is the repository root;
# pycuda is built against nvcc (an NVIDIA driver and the CUDA toolkit are needed; on a machine
# without a GPU drop "cuda" from the extras). In a terminal at the repository root:
#     pip install -e ".[cuda,viz]"
# %pip install -q -e "..[cuda,viz]"

# %%
from warp_drive.cuda.device import has_cuda_device

BACKEND = "pycuda" if has_cuda_device() else "cpu"
print("backend:", BACKEND)

# %%
import numpy as np
import torch


def show(path):
    """Display an image file (PNG or GIF) in Jupyter; print its path elsewhere."""
    try:
        from IPython.display import Image, display
    except ImportError:
        print(path)
    else:
        display(Image(filename=str(path)))


# %% [markdown]
# ## 1. A run config
#
# A run config has the WarpDrive YAML shape: `name`, `env` (the env's constructor arguments),
# `trainer`, `policy.<tag>` (one section per policy), `saving`. Every example env ships one next to
# its code. `load_run_config` validates it (unknown keys are errors with a "did you mean" hint) and
# applies dotted overrides, exactly as the command line does:
#
# ```bash
# python -m warp_drive.training.example_training_script --env cartpole trainer.num_envs=64
# ```
#
# `docs/config_reference.md` lists every key. We shrink the bundled CartPole config so it trains in
# seconds on a CPU: 64 envs, 50 steps per env per iteration, PPO.

# %%
from example_envs import get_default_config_path
from warp_drive.config import load_run_config

NUM_ENVS, STEPS_PER_ITERATION, EPISODE_LENGTH = 64, 50, 200
NUM_ITERATIONS = 100 if BACKEND == "pycuda" else 30
BATCH = NUM_ENVS * STEPS_PER_ITERATION

overrides = [
    f"env.episode_length={EPISODE_LENGTH}",
    "env.reset_pool_size=100",  # each reset draws one of 100 gymnasium initial states
    f"trainer.num_envs={NUM_ENVS}",
    f"trainer.train_batch_size={BATCH}",  # env steps per iteration, all envs together
    f"trainer.num_episodes={NUM_ITERATIONS * BATCH // EPISODE_LENGTH}",  # iterations = T * episodes / batch
    f"trainer.env_backend={BACKEND}",
    "trainer.seed=0",
    "policy.shared.algorithm=PPO",
    "policy.shared.lr=0.003",
    "policy.shared.gae_lambda=0.95",
    "policy.shared.entropy_coeff=0.01",
    "policy.shared.vf_loss_coeff=0.5",
    "policy.shared.max_grad_norm=0.5",
    "policy.shared.num_minibatches=4",
    "policy.shared.normalize_advantage=true",
    "saving.metrics_log_freq=1",
]
config = load_run_config(get_default_config_path("cartpole"), overrides)
print(config.name, "| env:", config.env)
print("trainer:", config.trainer)
print("policy 'shared':", config.policy["shared"].algorithm, config.policy["shared"].model.fc_dims)

# %% [markdown]
# Typos fail at load time, with the fix:

# %%
from warp_drive.errors import ConfigError

try:
    load_run_config(get_default_config_path("cartpole"), ["trainer.num_env=64"])
except ConfigError as err:
    print(err)

# %% [markdown]
# ## 2. Train CartPole
#
# `Trainer(env_wrapper, config)` builds one model per policy tag (here the single tag `shared` owns
# the only agent), the sampler and the rollout buffers on the wrapper's device. `train()` runs all
# iterations; metrics go to `<run dir>/metrics.jsonl` (and `.csv`). The run directory is
# `saving.basedir/name/tag/<results_dir>` as in WarpDrive 2.7.1; an absolute `results_dir` is used
# as is, which is what we do here.

# %%
from pathlib import Path

from example_envs.classic_control import ClassicControlCartPoleEnv
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.training.trainer import Trainer

env = ClassicControlCartPoleEnv(**config.env)
wrapper = EnvWrapper(env, num_envs=NUM_ENVS, env_backend=BACKEND)
trainer = Trainer(wrapper, config, results_dir=Path("runs/cartpole").resolve(), verbose=False)

before = trainer.evaluate(deterministic=True)["shared"]["episode_return"].mean()
trainer.train()
after = trainer.evaluate(deterministic=True)["shared"]["episode_return"].mean()
print(f"{trainer.num_iters} iterations, {trainer.perf['steps']:,} env steps, "
      f"{trainer.env_steps_per_second:,.0f} env steps/s on {BACKEND}")
print(f"greedy episode return: {before:.1f} before training, {after:.1f} after (maximum {EPISODE_LENGTH})")

# %% [markdown]
# ## 3. The learning curve
#
# `warp_drive.training.run.plot` draws every `*episode_return_mean` metric (and the throughput) against
# env steps. From a shell: `python -m warp_drive.training.run.plot runs/cartpole/metrics.jsonl`.

# %%
from warp_drive.training.run.plot import plot_learning_curves

png = plot_learning_curves(trainer.save_dir)
print("saved", png)
show(png)

# %% [markdown]
# ## 4. Evaluation
#
# `evaluate` rolls out whole episodes with the current policies (greedy with
# `deterministic=True`, sampled otherwise) and returns the return and length of each episode. The
# envs are force-reset before and after, so training can continue afterwards.

# %%
import matplotlib.pyplot as plt

greedy = trainer.evaluate(deterministic=True)["shared"]
sampled = trainer.evaluate(deterministic=False)["shared"]
plt.figure(figsize=(5, 3))
plt.hist([greedy["episode_return"], sampled["episode_return"]], bins=20, label=["greedy", "sampled"])
plt.xlabel("episode return")
plt.ylabel("episodes")
plt.legend()
plt.title(f"CartPole after {trainer.iteration} iterations ({len(greedy['episode_return'])} episodes each)")
plt.show()

# %% [markdown]
# ## 5. Checkpoint and resume
#
# `save_checkpoint()` writes the weights, optimizer states, sampler counters, RNG states and the
# iteration counter atomically (`checkpoint_<iteration>.pt`, plus `checkpoint_latest.pt`). A new
# trainer resumes from it with `load_checkpoint(path)`; the command line does the same with
# `--resume runs/cartpole`.

# %%
checkpoint = trainer.save_checkpoint()
print("saved", checkpoint.name)

resumed_env = ClassicControlCartPoleEnv(**config.env)
resumed = Trainer(EnvWrapper(resumed_env, num_envs=NUM_ENVS, env_backend=BACKEND), config,
                  results_dir=Path("runs/cartpole_resumed").resolve(), verbose=False)
resumed.load_checkpoint(checkpoint)

same = all(torch.equal(a, b) for a, b in zip(trainer.policies["shared"].model.parameters(),
                                            resumed.policies["shared"].model.parameters()))
print("resumed at iteration", resumed.iteration, "| identical weights:", same)
resumed.train(num_iters=2)  # carries on from there
print("now at iteration", resumed.iteration)

# %% [markdown]
# ## 6. Several policies: Tag (continuous)
#
# In Tag, taggers chase runners; each agent type gets its own policy. The bundled config has two
# policy sections, `tagger` and `runner`, and the policy map says which agent ids each one controls.
# We shrink the env (2 taggers, 10 runners, 100 steps) for a quick run.

# %%
from example_envs.tag_continuous.tag_continuous import TagContinuous

TAG_ENVS, TAG_LENGTH = 8, 100
TAG_ITERATIONS = 40 if BACKEND == "pycuda" else 3
tag_config = load_run_config(get_default_config_path("tag_continuous"), [
    "env.num_taggers=2", "env.num_runners=10", "env.grid_length=10.0", f"env.episode_length={TAG_LENGTH}",
    "env.num_other_agents_observed=4", "env.tagging_distance=0.05",
    f"trainer.num_envs={TAG_ENVS}", f"trainer.train_batch_size={TAG_ENVS * TAG_LENGTH}",
    f"trainer.num_episodes={TAG_ENVS * TAG_ITERATIONS}", f"trainer.env_backend={BACKEND}", "trainer.seed=0",
    "policy.tagger.model.fc_dims=[32, 32]", "policy.runner.model.fc_dims=[32, 32]", "saving.metrics_log_freq=1",
])
tag_env = TagContinuous(**tag_config.env)
policy_map = {"tagger": sorted(tag_env.taggers), "runner": sorted(tag_env.runners)}
print("policy map:", policy_map)

tag_trainer = Trainer(EnvWrapper(tag_env, num_envs=TAG_ENVS, env_backend=BACKEND), tag_config, policy_map,
                      results_dir=Path("runs/tag").resolve(), verbose=False)
tag_trainer.train()
for tag, result in tag_trainer.evaluate().items():
    print(f"{tag:6s}: greedy episode return {result['episode_return'].mean():7.2f}")

# %% [markdown]
# ## 7. An animation of one episode
#
# `warp_drive.testing.rollout_animation` plays one episode of an env on its NumPy reference (on the
# host, so it works with either backend) with any policy `policy(observations, t) -> actions`, and
# draws it with the env's own render hook (`render_rollout`; Tag's renderer lives with Tag in
# `example_envs/tag_continuous/rendering.py`) into a GIF (or an MP4 when ffmpeg is installed).
# Here the actions are sampled from the trained models. We draw every fifth step to keep the file
# small.

# %%
from warp_drive.testing.rollout_animation import collect_episode, render_episode

generator = torch.Generator(device=tag_trainer.device).manual_seed(0)


@torch.no_grad()
def trained_policy(observations: np.ndarray, t: int) -> np.ndarray:
    """(N, obs_dim) observations of one env -> (N, 2) actions, each agent by its own policy."""
    obs = torch.as_tensor(observations, device=tag_trainer.device)
    actions = np.zeros((tag_env.num_agents, 2), np.int32)
    for p in tag_trainer.policies.values():
        head_probs, _ = p.model(obs[p.agent_ids])  # one (agents, choices) tensor per action head
        columns = [torch.multinomial(probs, 1, generator=generator)[:, 0] for probs in head_probs]
        actions[p.agent_ids] = torch.stack(columns, -1).cpu().numpy()
    return actions


host_env = TagContinuous(**tag_config.env)
episode = collect_episode(host_env, trained_policy, seed=0)  # records host_env.render_state_names
print("episode of", episode.rewards.shape[0], "steps;",
      int((~episode.states["still_in_the_game"][-1].astype(bool)).sum()), "runners tagged")
every_5th = episode.frames(slice(None, None, 5))
gif = render_episode(host_env, every_5th, "tag_episode.gif", fps=5, dpi=60, title="Tag (1 frame per 5 steps)")
show(gif)

# %% [markdown]
# Logs recorded on the device (tutorial 3's `LogController`) can be animated the same way:
# `host_env.render_rollout({"loc_x": loc_x_for_log, "loc_y": loc_y_for_log, ...})`.
#
# ## Summary
#
# * `load_run_config(path, overrides)` -> `EnvWrapper` -> `Trainer(wrapper, config, policy_map)` ->
#   `train()`.
# * Metrics in `results_dir/metrics.jsonl`; `warp_drive.training.run.plot` draws them.
# * `evaluate`, `save_checkpoint` / `load_checkpoint`.
# * `rollout_animation.collect_episode` + `render_episode` (the env's render hook) for a GIF.
#
# Next: [tutorial 6](06_scaling_up.ipynb), more envs, more agents, more GPUs.
