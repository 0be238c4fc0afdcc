# %% [markdown]
# # Tutorial 7: training with PyTorch Lightning
#
# `warp_drive.training.lightning` runs the training of tutorial 5 as a Lightning 2.x
# `LightningModule`, so Lightning's loggers, checkpoints, callbacks and multi-GPU strategies apply.
# Nothing moves off the device:
#
# * the **engine** is the one the `Trainer` of tutorial 5 holds: env replicas, sampler, models, optimizers and
#   rollout buffers on one device;
# * the **data module** yields one on-device rollout per batch (`{policy tag: {obs, actions,
#   advantages, returns, ...}}`, GPU tensors, no workers, no copies);
# * the **module**'s `training_step` applies the same A2C/PPO update as `Trainer.update`, with
#   manual optimization, one optimizer per trained policy.
#
# With the same seed both paths produce the same weights; pick Lightning when you want its
# ecosystem.

# %% tags=["install"]
# Install warp_drive from a clone of its repository (the package is not on PyPI), with the CUDA
# and Lightning extras. Jupyter runs this notebook in tutorials/, so ".." is the repository
# root; pycuda is built against nvcc (an NVIDIA driver and the CUDA toolkit are needed; on a
# machine without a GPU drop "cuda" from the extras). In a terminal at the repository root:
#     pip install -e ".[cuda,lightning]"
# %pip install -q -e "..[cuda,lightning]"

# %%
from warp_drive.cuda.device import has_cuda_device

BACKEND = "pycuda" if has_cuda_device() else "cpu"
print("backend:", BACKEND)

# %% [markdown]
# ## 1. An engine factory
#
# With several GPUs every process must build its env replicas on its own GPU, after Lightning has
# chosen that GPU. So the module is built from an **engine factory**:
# `factory(rank=, world_size=, device_id=) -> Trainer` (or an `Engine`). `ExampleEnvEngineFactory` builds engines for
# the bundled example envs from their run configs, with dotted overrides; any callable with that
# signature works for your own envs.
#
# Same CartPole setup as tutorial 5: 64 envs, 50 steps per env per iteration, PPO.

# %%
from warp_drive.training.lightning import (
    EpisodeReturnLogger,
    ExampleEnvEngineFactory,
    WarpDriveDataModule,
    WarpDriveModule,
    build_lightning_trainer,
)

NUM_ENVS, STEPS_PER_ITERATION, EPISODE_LENGTH = 64, 50, 200
BATCH = NUM_ENVS * STEPS_PER_ITERATION

factory = ExampleEnvEngineFactory(
    env="cartpole",
    backend=BACKEND,
    results_dir="runs/engine",
    overrides=[
        f"env.episode_length={EPISODE_LENGTH}", "env.reset_pool_size=100",
        f"trainer.num_envs={NUM_ENVS}", f"trainer.train_batch_size={BATCH}",
        f"trainer.num_episodes={100 * BATCH // EPISODE_LENGTH}", "trainer.seed=0",
        "policy.shared.algorithm=PPO", "policy.shared.lr=0.003", "policy.shared.gae_lambda=0.95",
        "policy.shared.entropy_coeff=0.01", "policy.shared.vf_loss_coeff=0.5", "policy.shared.max_grad_norm=0.5",
        "policy.shared.num_minibatches=4", "policy.shared.normalize_advantage=true",
    ],
)
trainer_run = factory(rank=0, world_size=1, device_id=0 if BACKEND == "pycuda" else None)  # a Trainer: engine + run folder
module = WarpDriveModule(trainer_run, iterations_per_epoch=4)  # an epoch = 4 rollouts = one 200-step episode
engine = module.engine  # the Trainer's engine, which the module trains
print("engine on", engine.device, "| policies:", list(engine.policies),
      "| rollouts per Lightning epoch:", module.iterations_per_epoch)

# %% [markdown]
# ## 2. Fit
#
# `build_lightning_trainer` returns a `lightning.Trainer` with settings that suit on-device rollouts:
# the accelerator of the engine's backend, a CSV logger (add `"tensorboard"` if you like), a
# checkpoint every epoch plus `last.ckpt` (here in a folder of our choice), and a
# `PerfStatsCallback` (env steps per second per epoch). By default `max_epochs` covers the run config's `num_episodes`; we train fewer epochs on a
# CPU. Gradient clipping comes from the run config (`max_grad_norm`), not from Lightning's
# `gradient_clip_val`.
#
# `log_every_n_steps=1` logs the update metrics of every rollout (the default is every 10th).
#
# `EpisodeReturnLogger` is one of the bundled callbacks: it reports the mean episode return per
# policy at the end of every epoch (and, with `evaluate=True`, runs a greedy evaluation).

# %%
from lightning.pytorch.callbacks import ModelCheckpoint

EPOCHS = 20 if BACKEND == "pycuda" else 5
CHECKPOINTS = "lightning_runs/checkpoints"
returns = EpisodeReturnLogger(every_n_epochs=1)
trainer = build_lightning_trainer(module, max_epochs=EPOCHS, default_root_dir="lightning_runs", loggers=["csv"],
                                  checkpoint=ModelCheckpoint(dirpath=CHECKPOINTS, save_last=True),
                                  callbacks=[returns], log_every_n_steps=1, enable_progress_bar=False)
trainer.fit(module, datamodule=WarpDriveDataModule(module))

print(f"{engine.iteration} rollouts, {engine.iteration * BATCH:,} env steps")
for row in returns.history:
    print(f"epoch {row['epoch']:2.0f}: mean episode return {row.get('shared/episode_return_mean', float('nan')):6.1f}")

# %% [markdown]
# ## 3. Logged metrics
#
# Every update metric (losses, entropy, KL, gradient norm, ...) is logged per step, and the episode
# statistics, learning rates and throughput per epoch, here to `metrics.csv` of the CSV logger.

# %%
import csv

import matplotlib.pyplot as plt

log_dir = trainer.logger.log_dir
with open(f"{log_dir}/metrics.csv") as f:
    rows = list(csv.DictReader(f))
print("logged:", sorted(k for k in rows[0] if "/" in k))

epoch_rows = [r for r in rows if r.get("shared/episode_return_mean")]
step_rows = [r for r in rows if r.get("shared/entropy")]
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3))
left.plot([int(r["epoch"]) for r in epoch_rows], [float(r["shared/episode_return_mean"]) for r in epoch_rows], marker=".")
left.set_xlabel("epoch")
left.set_title("shared/episode_return_mean")
right.plot([int(r["step"]) for r in step_rows], [float(r["shared/entropy"]) for r in step_rows])
right.set_xlabel("rollout")
right.set_title("shared/entropy")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Checkpoints: resume and restore
#
# Lightning checkpoints hold the weights and optimizer states; the module adds the engine's counters
# (iteration, per-policy timesteps, sampler seeds and counters, RNG states) under
# `checkpoint["warp_drive"]`. Resume a fit by passing `ckpt_path`, a file or `"last"` (the
# `last.ckpt` of the trainer's checkpoint folder):

# %%
print("last checkpoint:", trainer.checkpoint_callback.last_model_path)

more = build_lightning_trainer(module, max_epochs=EPOCHS + 2, default_root_dir="lightning_runs", loggers=["csv"],
                               checkpoint=ModelCheckpoint(dirpath=CHECKPOINTS, save_last=True),
                               enable_progress_bar=False)
more.fit(module, datamodule=WarpDriveDataModule(module), ckpt_path="last")
print("resumed and trained to epoch", more.current_epoch, "- rollouts:", engine.iteration)

# %% [markdown]
# Outside `fit`, e.g. to evaluate in a fresh session, `restore_checkpoint` loads weights, optimizer
# states and engine counters into a module built from the factory:

# %%
restored = WarpDriveModule(engine_factory=factory)
restored.restore_checkpoint(more.checkpoint_callback.last_model_path)
result = restored.run_trainer.evaluate(deterministic=True)["shared"]
print(f"restored at rollout {restored.engine.iteration}: greedy episode return {result['episode_return'].mean():.1f}")

# %% [markdown]
# ## 5. Several GPUs
#
# Pass `engine_factory=` instead of an engine and a DDP strategy: each process (rank) then builds
# its own env replicas on its own GPU in `setup`, with its own sampler seeds, and Lightning averages
# the gradients. With more than one trained policy `build_lightning_trainer(strategy="ddp")` turns
# on `find_unused_parameters` (each backward uses one policy's parameters).
#
# ```python
# module = WarpDriveModule(engine_factory=factory)
# trainer = build_lightning_trainer(module, devices=2, strategy="ddp", max_epochs=100)
# trainer.fit(module, datamodule=WarpDriveDataModule(module))
# ```
#
# DDP starts one process per GPU by re-running the program, so run it as a script, not from a
# notebook cell. `warp_drive.training.lightning.train` is such a script, with the same overrides as
# the example training script:
#
# ```bash
# python -m warp_drive.training.lightning.train --env tag_continuous --devices 2 --strategy ddp trainer.num_envs=100
# python -m warp_drive.training.lightning.train --env tag_continuous --resume last      # continue
# python -m warp_drive.training.lightning.train --env cartpole --backend cpu --max-epochs 2
# ```
#
# The cell below runs a short DDP job when this machine has at least two GPUs:

# %%
import torch

NUM_GPUS = torch.cuda.device_count() if BACKEND == "pycuda" else 0
if NUM_GPUS >= 2:
    # !python -m warp_drive.training.lightning.train --env cartpole --devices {NUM_GPUS} --strategy ddp --max-epochs 2 --results-dir lightning_runs/ddp --quiet trainer.num_envs=64 trainer.train_batch_size=3200
    print("logs and checkpoints in lightning_runs/ddp")
else:
    print(f"{NUM_GPUS} GPU(s) here: multi-GPU training needs at least 2 (the commands above show how)")

# %% [markdown]
# ## Summary
#
# * `ExampleEnvEngineFactory(env=..., overrides=[...])` (or your own factory) builds the engine.
# * `WarpDriveModule(engine)` for one device, `WarpDriveModule(engine_factory=factory)` for DDP.
# * `build_lightning_trainer(module, ...)` + `fit(module, datamodule=WarpDriveDataModule(module))`.
# * Callbacks: `EpisodeReturnLogger`, `PerfStatsCallback`, `RolloutRenderCallback` (a GIF of a Tag
#   episode every N epochs).
# * Resume with `fit(..., ckpt_path=...)`; restore outside `fit` with `restore_checkpoint`.
