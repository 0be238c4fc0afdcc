"""WarpDrive training as a LightningModule (for either Lightning distribution).

The module owns an *engine* (an :class:`~warp_drive.training.engine.Engine`, given as such or inside the
:class:`~warp_drive.training.run.trainer.Trainer` an engine factory builds, whose run folder it then keeps as
:attr:`WarpDriveModuleBase.run_trainer`) and trains through the same calls as ``Trainer.train``; Lightning
drives the loop:

* data: :class:`~warp_drive.training.lightning.data.RolloutDataset` runs one on-device rollout per
  batch and yields the per-policy batches;
* ``training_step``: manual optimization: the engine's ``update_policies`` with Lightning's wrappers
  of every trained policy's own optimizers, ``self.manual_backward`` and ``self.clip_gradients``
  (same shuffles, schedules, clipping and cpu chunks, so with the same seed both paths produce the
  same weights);
* logging: the update metrics on logging steps, and per epoch learning rates, timesteps, env steps
  per second and episode statistics (:mod:`~warp_drive.training.lightning.logged_metrics`);
* checkpoints: weights and optimizer states are Lightning's; the engine's part goes under
  ``checkpoint["warp_drive"]`` (:mod:`~warp_drive.training.lightning.engine_state`).

Multi-GPU (``strategy="ddp"``): pass ``engine_factory=``; each rank builds its own env replicas in
:meth:`WarpDriveModule.setup` and Lightning's DDP averages the gradients (the engine's own DDP
wrapper is dropped; ``find_unused_parameters``: :func:`~warp_drive.training.lightning.engine.check_unused_parameters`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError, UsageError
from warp_drive.training.engine import Engine
from warp_drive.training.run.trainer import Trainer
from warp_drive.training.lightning.data import (
    default_iterations_per_epoch,
    episode_window,
    rollout_dataloader,
)
from warp_drive.training.lightning.engine import (
    EngineFactory,
    check_placement,
    check_unused_parameters,
    engine_source,
)
from warp_drive.training.lightning.checkpoint_hooks import CheckpointHooks, guard_checkpoint_loads
from warp_drive.training.lightning.legacy_api import LegacyModuleAPI
from warp_drive.training.lightning.logged_metrics import episode_means, epoch_metrics, take_episode_sums
from warp_drive.training.lightning.policies import (
    engine_optimizers,
    loose_parameters,
    optimizer_keys,
    optimizer_state_to,
    optimizers_by_policy,
    policy_networks,
)

logger = logging.getLogger(__name__)

Tensor = torch.Tensor


class WarpDriveModuleBase(LegacyModuleAPI, CheckpointHooks):
    """LightningModule logic running every policy's updates (any registered algorithm) on GPU-resident
    rollout batches.

    A mixin: fit ``WarpDriveModule`` of :mod:`warp_drive.training.lightning` or
    :mod:`warp_drive.training.pytorch_lightning` (2.7.1's tutorial 7).

    Three ways to build it:

    * WarpDrive 2.7.1's form, ``WarpDriveModule(env_wrapper, config, policy_tag_to_agent_id_map, ...)``:
      the engine (a :class:`~warp_drive.training.run.trainer.Trainer`) is built from these arguments.
      One Lightning epoch is then one training iteration (a rollout of ``train_batch_size`` env
      steps and the update), so ``max_epochs = num_episodes * episode_length // train_batch_size``
      (:attr:`num_iters`) trains the whole run; the policy weights are written to the run folder every
      ``saving.model_params_save_freq`` iterations and after the last one, as ``Trainer.train`` does.
    * ``WarpDriveModule(engine)``: an already built engine (one device).
    * ``WarpDriveModule(engine_factory=...)``: the engine is built per rank in :meth:`setup`
      (required for DDP).

    Args:
        env_wrapper: 2.7.1 form: the wrapped env (pycuda or cpu backend). An engine passed here
            positionally is taken as ``engine``.
        config: 2.7.1 form: the run config (dict in 2.7.1's layout, :class:`RunConfig` or YAML path).
        policy_tag_to_agent_id_map: 2.7.1 form: ``{policy tag: [agent ids]}``.
        create_separate_placeholders_for_each_policy, obs_dim_corresponding_to_num_agents:
            2.7.1 form: passed on to the Trainer.
        results_dir: 2.7.1 form: run folder of the Trainer (metrics files, policy weights).
        verbose: 2.7.1 form: the Trainer's verbosity.
        engine: The engine (env, sampler, models, optimizers, buffers).
        engine_factory: ``factory(rank=, world_size=, device_id=) -> Trainer``, e.g.
            :class:`~warp_drive.training.lightning.example_factory.ExampleEnvEngineFactory`.
        iterations_per_epoch: Rollouts per Lightning epoch; default 1 in the 2.7.1 form, else
            :func:`~warp_drive.training.lightning.data.iterations_per_epoch_for` (whole episodes, >= 10 rollouts).
        log_every_n_iterations: Log the update metrics (losses, KL, gradient norms) every this many
            iterations and after the last one, as epoch values (written whatever Lightning's
            ``log_every_n_steps``); default ``saving.metrics_log_freq`` in the 2.7.1 form, else
            None: on Lightning's logging steps.
        sync_dist: Average logged metrics over ranks under DDP (one stacked all-reduce per logging
            step for the update metrics; the epoch metrics at the epoch end).
        track_grad_norm: Log ``<tag>/grad_norm``, the mean pre-clip gradient norm (one extra
            norm per gradient step, no host sync).

    Raises:
        ConfigError: No way or more than one way to get the engine; no trained policy; a policy
            tag that is not a valid module name; a bad ``iterations_per_epoch``.

    Example (2.7.1's tutorial 7)::

        from pytorch_lightning import Trainer
        from warp_drive.training.pytorch_lightning import CUDACallback, PerfStatsCallback, WarpDriveModule

        module = WarpDriveModule(env_wrapper=env_wrapper, config=run_config,
                                 policy_tag_to_agent_id_map=policy_map, verbose=True)
        trainer = Trainer(accelerator="gpu", devices=1, max_epochs=module.num_iters,
                          callbacks=[CUDACallback(module=module),
                                     PerfStatsCallback(batch_size=module.training_batch_size,
                                                       num_iters=module.num_iters, log_freq=10)])
        trainer.fit(module)
    """

    def __init__(
        self,
        env_wrapper: Any = None,
        config: Any = None,
        policy_tag_to_agent_id_map: Mapping[str, Sequence[int]] | None = None,
        create_separate_placeholders_for_each_policy: bool = False,
        obs_dim_corresponding_to_num_agents: str = "first",
        results_dir: str | None = None,
        verbose: bool = True,
        *,
        engine: Engine | None = None,
        engine_factory: EngineFactory | None = None,
        iterations_per_epoch: int | None = None,
        log_every_n_iterations: int | None = None,
        sync_dist: bool = True,
        track_grad_norm: bool = True,
    ) -> None:
        super().__init__()
        env_wrapper, engine, legacy_args = engine_source(
            env_wrapper, config, policy_tag_to_agent_id_map, engine, engine_factory)
        if iterations_per_epoch is not None and int(iterations_per_epoch) < 1:
            raise ConfigError(f"iterations_per_epoch={iterations_per_epoch} must be >= 1")
        if log_every_n_iterations is not None and int(log_every_n_iterations) < 1:
            raise ConfigError(f"log_every_n_iterations={log_every_n_iterations} must be >= 1 (or None)")
        if legacy_args:
            engine = Trainer(env_wrapper, config, policy_tag_to_agent_id_map,
                             create_separate_placeholders_for_each_policy, obs_dim_corresponding_to_num_agents,
                             results_dir=results_dir, verbose=verbose)  # the engine and its run folder
            if iterations_per_epoch is None:
                iterations_per_epoch = 1  # 2.7.1: one epoch = one training iteration
            if log_every_n_iterations is None:
                log_every_n_iterations = engine.engine.config.saving.metrics_log_freq
        run_config = None
        if engine is not None:
            run_config = (engine.engine if isinstance(engine, Trainer) else engine).config.to_dict()
        elif callable(getattr(engine_factory, "run_config", None)):
            run_config = engine_factory.run_config().to_dict()  # type: ignore[union-attr]
        self.save_hyperparameters({"iterations_per_epoch": iterations_per_epoch,
                                   "log_every_n_iterations": log_every_n_iterations, "sync_dist": sync_dist,
                                   "track_grad_norm": track_grad_norm, "run_config": run_config})
        self.automatic_optimization = False
        self.engine_factory = engine_factory
        self.sync_dist = sync_dist
        self.track_grad_norm = track_grad_norm
        self.log_every_n_iterations = None if log_every_n_iterations is None else int(log_every_n_iterations)
        self.verbose = verbose
        #: Built from 2.7.1's arguments: policy weights are saved at ``model_params_save_freq``.
        self.saves_policy_weights = legacy_args
        self._iterations_per_epoch_arg = iterations_per_epoch
        self.engine: Engine | None = None
        #: the plain Trainer the engine came in (its run folder and metric files), or None for a bare engine
        self.run_trainer: Trainer | None = None
        self.policy_models = nn.ModuleDict()
        self.policy_parameters = nn.ModuleDict()  # what the optimizers step outside the networks
        self.episode_metrics: dict[str, Tensor] = {}
        self._trained: list[str] = []
        self._optimizer_keys: list[tuple[str, str]] = []
        self._pending_state: dict[str, Any] | None = None
        self._t_last = 0.0
        if engine is not None:
            self.attach_engine(engine)

    # ------------------------------------------------------------------ engine
    def attach_engine(self, engine: Engine | Trainer) -> None:
        """Adopt ``engine`` (an :class:`Engine`, or a :class:`Trainer`: its engine, and the Trainer as
        :attr:`run_trainer`): register its policies' networks as submodules (``policy_models.<tag>``,
        :func:`~warp_drive.training.lightning.policies.policy_networks`) and the parameters a trained policy's
        optimizers step outside them (``policy_parameters.<tag>``); policies with ``to_train: false`` (only rolled
        out) get ``requires_grad=False``.

        Raises:
            ConfigError: neither an Engine nor a Trainer, a tag or network role that cannot name a
                submodule, no trained policy, or a trained policy without an optimizer.
        """
        run_trainer = engine if isinstance(engine, Trainer) else None
        if run_trainer is not None:
            engine = run_trainer.engine
        if not isinstance(engine, Engine):
            raise ConfigError(f"the Lightning module trains an Engine (or the Trainer holding one); got {type(engine).__name__}")
        for tag in engine.policies:
            if not tag or "." in tag:
                raise ConfigError(f"policy tag {tag!r} cannot name a submodule; use a tag without '.'")
        trained = [tag for tag, p in engine.policies.items() if p.to_train]
        if not trained:
            raise ConfigError("no policy of the run config has to_train=true: there is nothing to train")
        keys = optimizer_keys(engine, trained)
        self.engine, self.run_trainer = engine, run_trainer
        for tag, p in engine.policies.items():
            self.policy_models[tag] = policy_networks(p)
            if not p.to_train:
                self.policy_models[tag].requires_grad_(False)
            elif loose := loose_parameters(p, self.policy_models[tag]):
                self.policy_parameters[tag] = nn.ParameterList(loose)
        self._trained, self._optimizer_keys = trained, keys
        if self._pending_state is not None:
            state, self._pending_state = self._pending_state, None
            self._restore_engine_state(state)

    def ensure_engine(self, rank: int = 0, world_size: int = 1, device_id: int | None = None) -> Engine:
        """The engine, built with the factory first if needed (outside ``Trainer.fit``)."""
        if self.engine is None:  # the constructor guarantees a factory then
            self.attach_engine(self.engine_factory(rank=rank, world_size=world_size, device_id=device_id))
        return self.engine  # type: ignore[return-value]

    def _require_engine(self, needed_by: str) -> Engine:
        if self.engine is None:
            raise UsageError(f"{needed_by} needs the engine, which setup() builds: fit the module "
                             "(or call ensure_engine() first)")
        return self.engine

    @property
    def iterations_per_epoch(self) -> int | None:
        """Rollouts per Lightning epoch (None until the engine exists, unless given)."""
        if self._iterations_per_epoch_arg is not None:
            return int(self._iterations_per_epoch_arg)
        return default_iterations_per_epoch(self.engine) if self.engine is not None else None

    @property
    def num_trained_policies(self) -> int | None:
        """Number of trained policies (read from the factory's config before the engine exists)."""
        if self.engine is not None:
            return len(self._trained)
        run_config = getattr(self.engine_factory, "run_config", None)
        return len(run_config().policies_to_train) if callable(run_config) else None

    def _distributed(self) -> bool:
        return self._trainer is not None and self.trainer.world_size > 1

    # ------------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        """Build the engine on this rank's device (factory) and check the placement."""
        strategy = self.trainer.strategy
        guard_checkpoint_loads(strategy)  # before Lightning restores a checkpoint
        root = strategy.root_device
        if self.engine is None:
            device_id = root.index if root.type == "cuda" else None
            self.ensure_engine(self.global_rank, self.trainer.world_size, device_id)
        engine = self._require_engine("setup()")
        check_placement(engine, root, self.global_rank)
        engine.use_local_gradients()  # Lightning's DDP syncs the gradients; the engine's wrapper is not used
        check_unused_parameters(strategy, len(self._optimizer_keys), self.trainer.world_size)

    @property
    def num_optimizers(self) -> int | None:
        """Optimizers of the trained policies (None until the engine exists)."""
        return None if self.engine is None else len(self._optimizer_keys)

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        """The trained policies' own optimizers: policy order, then each policy's ``optimizers()`` order."""
        return engine_optimizers(self._require_engine("configure_optimizers()"), self._optimizer_keys)

    def train_dataloader(self) -> Any:
        """Rollouts of this module's engine, used when ``fit`` gets no datamodule or dataloader (a
        :class:`~warp_drive.training.lightning.datamodule.WarpDriveDataModule` serves the same data)."""
        return rollout_dataloader(self._require_engine("train_dataloader()"), self.iterations_per_epoch)

    def on_train_start(self) -> None:
        """Reset every env and the running episode statistics, as ``Trainer.train`` does."""
        self._require_engine("on_train_start()").restart_episodes()
        self._t_last = time.perf_counter()

    def on_train_epoch_start(self) -> None:
        self._t_last = time.perf_counter()

    def training_step(self, batch: Mapping[str, Mapping[str, Any]], batch_idx: int) -> None:
        """Update every trained policy from one rollout batch (its algorithm's gradient steps, with
        Lightning's wrappers of its optimizers)."""
        engine = self._require_engine("training_step()")
        update_metrics = engine.update_policies(
            batch, optimizers=optimizers_by_policy(self._optimizer_keys, self.optimizers()), backward=self.manual_backward,
            clip_gradients=self._clip, track_grad_norm=self.track_grad_norm, sync_normalizers=self._sync_value_normalizers)
        engine.end_iteration(since=self._t_last)  # the time since the last step: the rollout and Lightning's own
        self._t_last = time.perf_counter()
        if self.saves_policy_weights:  # 2.7.1 form: weights every model_params_save_freq iterations and at the end
            self.save_model_checkpoint(engine.iteration - 1)
        self._log_step_metrics({f"{tag}/{key}": value for tag, m in update_metrics.items() for key, value in m.items()})
        if self.trainer.is_last_batch or batch_idx + 1 >= self.trainer.num_training_batches:
            self._log_epoch_metrics()

    def teardown(self, stage: str) -> None:
        """Lightning moved the optimizer states to the CPU: put them back next to the engine's models."""
        if self.engine is not None:
            for optimizer in engine_optimizers(self.engine, self._optimizer_keys):
                optimizer_state_to(optimizer, torch.device(self.engine.device))

    def cpu(self) -> WarpDriveModuleBase:
        """No-op: the models stay on their env's device (Lightning's teardown would move them, breaking the
        engine, whose env and buffers stay there, and any CUDA graph that reads the parameters in place)."""
        logger.debug("WarpDriveModule.cpu() ignored: the engine's models stay on %s",
                     None if self.engine is None else self.engine.device)
        return self

    # ------------------------------------------------------------------ update hooks
    def _clip(self, optimizer: Any, max_norm: float | None) -> None:
        """Lightning's gradient clipping (the policy's ``max_grad_norm``; nothing when it does not clip)."""
        if max_norm is not None:
            self.clip_gradients(optimizer, gradient_clip_val=max_norm, gradient_clip_algorithm="norm")

    @torch.no_grad()
    def _sync_value_normalizers(self, normalizers: list[Any]) -> None:
        """Average the running return statistics over ranks (each rank merged its own returns)."""
        norms = [n for n in normalizers if n is not None]
        if not norms or not self._distributed():
            return
        stats = torch.stack([torch.stack([n.mean, n.var + n.mean * n.mean]) for n in norms])
        stats = self.trainer.strategy.reduce(stats, reduce_op="mean")
        for n, (mean, second) in zip(norms, stats):
            n.mean.copy_(mean)
            n.var.copy_((second - mean * mean).clamp_min(0.0))

    # ------------------------------------------------------------------ logging
    def _is_logging_step(self) -> bool:
        """Whether this step's update metrics are logged (``self.log`` costs host time per call): every
        ``log_every_n_iterations`` iterations and after the last one when set, else on Lightning's logging steps."""
        every = self.log_every_n_iterations
        if every is not None:
            engine = self._require_engine("logging")
            return engine.iteration % every == 0 or engine.iteration == engine.num_iters
        connector = getattr(self.trainer, "_logger_connector", None)
        flag = getattr(connector, "should_update_logs", None)
        return True if flag is None else bool(flag)

    def _log_step_metrics(self, metrics: dict[str, Tensor]) -> None:
        if not metrics or not self._is_logging_step():
            return
        if self.sync_dist and self._distributed():
            names = list(metrics)
            stacked = torch.stack([metrics[k].detach().float().reshape(()) for k in names])
            stacked = self.trainer.strategy.reduce(stacked, reduce_op="mean")
            metrics = dict(zip(names, stacked.unbind(0)))
        per_iteration = self.log_every_n_iterations is None  # else epoch values: written whatever log_every_n_steps
        self.log_dict(metrics, on_step=per_iteration, on_epoch=not per_iteration, batch_size=1, sync_dist=False)

    def _log_epoch_metrics(self) -> None:
        """Logs the epoch values of :mod:`~warp_drive.training.lightning.logged_metrics` (episode sums of all ranks)."""
        engine = self._require_engine("logging")
        sync = self._distributed() and self.sync_dist  # values are equal on every rank: the mean changes nothing
        if engine.iteration % episode_window(engine) == 0:
            tags, sums = take_episode_sums(engine)
            if sync:
                sums = self.trainer.strategy.reduce(sums, reduce_op="sum")
            self.episode_metrics = episode = episode_means(tags, sums)
            returns = {k: v for k, v in episode.items() if k.endswith("episode_return_mean")}
            self.log_dict(returns, on_step=False, on_epoch=True, batch_size=1, prog_bar=True, sync_dist=sync)
            self.log_dict({k: v for k, v in episode.items() if k not in returns}, on_step=False, on_epoch=True,
                          batch_size=1, sync_dist=sync)
        host = epoch_metrics(engine, self._trained, self.trainer.world_size)
        self.log_dict(host, on_step=False, on_epoch=True, batch_size=1, sync_dist=sync)
