"""Callbacks for :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase` runs: throughput,
2.7.1's ``CUDACallback``, episode returns and rollout renders (one class each).

Mixins, bound to each distribution's ``Callback`` by :mod:`~warp_drive.training.lightning.binding`.
Each is also an example of a user callback: it reads the engine through ``pl_module.engine`` and
logs through ``pl_module.log``.
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from warp_drive.errors import ConfigError
from warp_drive.training.utils.minibatch import map_tensors
from warp_drive.vocab.constants import Constants
from warp_drive.training.engine import Engine
from warp_drive.training.run.evaluation import evaluate

logger = logging.getLogger(__name__)


def _engine(pl_module: Any) -> Engine:
    engine = getattr(pl_module, "engine", None)
    if engine is None:
        raise ConfigError(f"{type(pl_module).__name__} has no engine: these callbacks need a WarpDriveModule")
    return engine


def _synchronize(engine: Engine) -> None:
    dev = torch.device(engine.device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


class _IterationClock:
    """Sums the durations of marked intervals on the engine's device without syncing per interval: CUDA
    timing events, read (after one synchronize) by :meth:`collect`; ``time.perf_counter`` on the CPU."""

    def __init__(self) -> None:
        self._pending: list[tuple[Any, Any]] = []
        self._open: Any = None
        self.seconds = 0.0

    def start(self, device: torch.device) -> None:
        if device.type == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(device))
            self._open = event
        else:
            self._open = time.perf_counter()

    def stop(self, device: torch.device) -> None:
        if self._open is None:
            return
        if device.type == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(device))
            self._pending.append((self._open, event))
        else:
            self.seconds += time.perf_counter() - self._open
        self._open = None

    def collect(self) -> float:
        """Total seconds of the closed intervals (call after synchronizing the device)."""
        for begin, end in self._pending:
            self.seconds += begin.elapsed_time(end) / 1000.0
        self._pending.clear()
        return self.seconds


class PerfStatsCallbackBase:
    """Throughput of the run: per-epoch metrics and, in WarpDrive 2.7.1's form, printed stats.

    Logged each epoch (averaged over ranks): ``perf/epoch_ms``, ``perf/iteration_ms`` and, summed
    over ranks, ``perf/epoch_env_steps_per_s`` and ``perf/epoch_agent_steps_per_s``. Every row is
    also kept in :attr:`history`.

    Printed (rank 0) every ``log_freq`` iterations and after the last one, when ``batch_size`` is
    given (2.7.1's ``PerfStatsCallback(batch_size, num_iters, log_freq)``) or ``print_stats=True``:
    the mean update time per iteration ("training": from the start to the end of the training
    step; the rollout happens before it, while Lightning fetches the batch), the mean total time
    per iteration since training started, and env steps per second for both. Intervals are timed
    with CUDA events, so the device is synchronized only when printing. Printed rows are kept in
    :attr:`printed`.

    Args:
        batch_size: Env steps per iteration; default the engine's ``train_batch_size``.
        num_iters: Iterations of the run, shown as "iteration i / num_iters"; default the engine's.
        log_freq: Print every this many iterations.
        synchronize: Wait for the device at epoch boundaries (exact epoch times; one sync per epoch).
        log_metrics: Also ``pl_module.log`` the epoch values (else only :attr:`history`).
        print_stats: Print the stats; default: when ``batch_size`` is given.

    Raises:
        ConfigError: ``batch_size``, ``num_iters`` or ``log_freq`` < 1.
    """

    def __init__(self, batch_size: int | None = None, num_iters: int | None = None, log_freq: int = 1, *,
                 synchronize: bool = True, log_metrics: bool = True, print_stats: bool | None = None) -> None:
        super().__init__()
        for name, value in (("batch_size", batch_size), ("num_iters", num_iters), ("log_freq", log_freq)):
            if value is not None and int(value) < 1:
                raise ConfigError(f"PerfStatsCallback({name}={value}): must be an int >= 1")
        self.batch_size = None if batch_size is None else int(batch_size)
        self.num_iters = None if num_iters is None else int(num_iters)
        self.log_freq = int(log_freq)
        self.synchronize = synchronize
        self.log_metrics = log_metrics
        self.print_stats = batch_size is not None if print_stats is None else bool(print_stats)
        self.history: list[dict[str, float]] = []
        self.printed: list[dict[str, float]] = []
        self.iters = 0
        self._training = _IterationClock()
        self._t_train_start = 0.0
        self._t0 = 0.0
        self._it0 = 0

    # ------------------------------------------------------------------ per iteration (printed stats)
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        _synchronize(_engine(pl_module))
        self.iters = 0
        self._training = _IterationClock()
        self._t_train_start = time.perf_counter()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self.print_stats:
            self._training.start(torch.device(_engine(pl_module).device))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.iters += 1
        if not self.print_stats:
            return
        engine = _engine(pl_module)
        self._training.stop(torch.device(engine.device))
        if self.iters % self.log_freq == 0 or self.iters == self._num_iters(engine):
            self._print(trainer, engine)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.print_stats and self.iters and (not self.printed or self.printed[-1]["iteration"] != self.iters):
            self._print(trainer, _engine(pl_module))

    def _num_iters(self, engine: Engine) -> int:
        return self.num_iters if self.num_iters is not None else int(engine.num_iters)

    def perf_stats(self, engine: Engine) -> dict[str, float]:
        """Mean times per iteration and env steps per second so far (synchronizes the device)."""
        _synchronize(engine)
        training = self._training.collect()
        total = time.perf_counter() - self._t_train_start
        steps = self.iters * (self.batch_size if self.batch_size is not None
                              else int(engine.config.trainer.train_batch_size))
        iters = max(self.iters, 1)
        return {
            "training_ms_per_iter": 1000.0 * training / iters,
            "total_ms_per_iter": 1000.0 * total / iters,
            "training_env_steps_per_s": steps / training if training > 0 else math.nan,
            "total_env_steps_per_s": steps / total if total > 0 else math.nan,
        }

    def _print(self, trainer: Any, engine: Engine) -> None:
        stats = self.perf_stats(engine)
        self.printed.append({"iteration": float(self.iters), **stats})
        if not trainer.is_global_zero:
            return
        labels = {
            "training_ms_per_iter": "update time per iteration (ms)",
            "total_ms_per_iter": "total time per iteration (ms)",
            "training_env_steps_per_s": "env steps per second (update only)",
            "total_env_steps_per_s": "env steps per second (total)",
        }
        lines = ["-" * 52, f"WarpDrive throughput, iteration {self.iters} / {self._num_iters(engine)}"]
        lines += [f"  {labels[k]:<38}{v:>12.2f}" for k, v in stats.items()]
        print("\n".join(lines), flush=True)

    # ------------------------------------------------------------------ per epoch (logged metrics)
    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        engine = _engine(pl_module)
        if self.synchronize:
            _synchronize(engine)
        self._t0 = time.perf_counter()
        self._it0 = int(engine.iteration)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        engine = _engine(pl_module)
        if self.synchronize:
            _synchronize(engine)
        seconds = time.perf_counter() - self._t0
        iters = int(engine.iteration) - self._it0
        if iters <= 0 or seconds <= 0:
            return
        steps = iters * engine.config.trainer.train_batch_size * trainer.world_size
        stats = {
            "perf/epoch_ms": 1000.0 * seconds,
            "perf/iteration_ms": 1000.0 * seconds / iters,
            "perf/epoch_env_steps_per_s": steps / seconds,
            "perf/epoch_agent_steps_per_s": steps * engine.env_wrapper.n_agents / seconds,
        }
        self.history.append({"epoch": float(trainer.current_epoch), "iterations": float(iters), **stats})
        if self.log_metrics:
            pl_module.log_dict(stats, on_step=False, on_epoch=True, batch_size=1, sync_dist=trainer.world_size > 1)


class CUDACallbackBase:
    """Force-resets every env replica when training starts (WarpDrive 2.7.1's ``CUDACallback``).

    :class:`WarpDriveModule` already does so itself; the callback is kept so that 2.7.1 code
    (``callbacks=[CUDACallback(module=module), ...]``) runs unchanged. Works on either backend.

    Args:
        module: The module whose envs are reset; default: the module being fitted.
    """

    def __init__(self, module: Any = None) -> None:
        super().__init__()
        self.module = module

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        _engine(self.module if self.module is not None else pl_module).env_wrapper.reset_all_envs()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero:
            engine = _engine(self.module if self.module is not None else pl_module)
            print(f"Training finished after {engine.iteration} iterations.", flush=True)


class EpisodeReturnLoggerBase:
    """Reports mean episode returns per policy every ``every_n_epochs`` epochs.

    Reads the training-episode means of the epoch (``pl_module.episode_metrics``, one host sync) and, with
    ``evaluate=True``, also logs ``eval/<tag>/episode_return_mean`` of :func:`~warp_drive.training.run.evaluation.evaluate`, which force-resets the
    envs (training continues from fresh episodes). Rows are kept in :attr:`history` and written to the Python log on
    rank 0.

    Args:
        every_n_epochs: Period in epochs.
        evaluate: Also run an evaluation rollout.
        deterministic: Greedy actions in the evaluation.
        num_episodes: Episodes per env in the evaluation.
    """

    def __init__(self, every_n_epochs: int = 1, evaluate: bool = False, deterministic: bool = True,
                 num_episodes: int = 1) -> None:
        super().__init__()
        if every_n_epochs < 1 or num_episodes < 1:
            raise ConfigError(f"every_n_epochs={every_n_epochs} and num_episodes={num_episodes} must be >= 1")
        self.every_n_epochs = every_n_epochs
        self.evaluate = evaluate
        self.deterministic = deterministic
        self.num_episodes = num_episodes
        self.history: list[dict[str, float]] = []

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        epoch = trainer.current_epoch
        if (epoch + 1) % self.every_n_epochs:
            return
        engine = _engine(pl_module)
        row: dict[str, float] = {"epoch": float(epoch), "iteration": float(engine.iteration)}
        episode = getattr(pl_module, "episode_metrics", {}) or {}
        returns = {k: v for k, v in episode.items() if k.endswith("episode_return_mean")}
        if returns:
            values = torch.stack([v.float().reshape(()) for v in returns.values()]).cpu().tolist()
            row.update(dict(zip(returns, values)))
        if self.evaluate:
            results = evaluate(engine, deterministic=self.deterministic, num_episodes=self.num_episodes)
            local = {f"eval/{tag}/episode_return_mean": float(np.mean(r["episode_return"])) if len(r["episode_return"])
                     else float("nan") for tag, r in results.items()}
            pl_module.log_dict(local, on_step=False, on_epoch=True, batch_size=1, sync_dist=trainer.world_size > 1)
            row.update(local)
        self.history.append(row)
        if trainer.is_global_zero:
            logger.info("epoch %d (iteration %d): %s", epoch, engine.iteration,
                        ", ".join(f"{k} {v:.4g}" for k, v in row.items() if "/" in k))


def numpy_policy(engine: Engine, deterministic: bool = True, seed: int = 0) -> Callable[[np.ndarray, int], np.ndarray]:
    """The engine's policies as ``policy(obs (N, obs_dim), t) -> actions (N, heads)`` for host rollouts.

    A policy whose networks see more than their own observations (``actor_input`` / ``critic_input``) gets them
    composed from ``obs`` as one env (:meth:`NetworkInputs.compose <warp_drive.training.network_inputs.NetworkInputs.compose>`).
    A recurrent policy's state is carried from call to call, from its initial state at ``t == 0``.

    Raises:
        ConfigError: A policy has a Gaussian (Box) action head (host rollouts here are categorical), or reads the
            env's ``state`` (``global_state``), ``action_mask`` or ``active`` arrays (host rollouts see only
            observations).
    """
    policies = list(engine.policies.values())
    for p in policies:
        if p.action_spec.is_gaussian:
            raise ConfigError(f"policy '{p.tag}' has continuous actions; numpy_policy supports categorical heads only")
        if p.inputs is not None and p.inputs.store_names:
            fix = ("(critic_input global_state); numpy_policy's host rollouts see only observations: render a policy "
                   "trained with critic_input all_obs (or local) instead") if p.inputs.masks is None else (
                   "(action_mask / mask_inactive); numpy_policy's host rollouts see only observations: render the "
                   "episode on the device instead, or with a policy built with action_mask: off and mask_inactive: off")
            raise ConfigError(f"policy '{p.tag}' reads the env's {', '.join(p.inputs.store_names)} {fix}")
    heads = max(len(p.action_spec.categorical) for p in policies)
    num_agents = engine.env_wrapper.n_agents
    device = torch.device(engine.device)
    generator = torch.Generator(device=device).manual_seed(seed)
    states: dict[str, torch.Tensor] = {}  # recurrent policies' carried states: (A, *S)

    @torch.no_grad()
    def policy(obs: np.ndarray, t: int) -> np.ndarray:
        out = np.zeros((num_agents, heads), np.int32)
        x = torch.as_tensor(np.asarray(obs, np.float32), device=device)
        for p in policies:
            ids = torch.as_tensor(p.agent_ids, device=device)
            own = x.index_select(0, ids)
            if p.inputs is not None:  # as one env: (1, A, ...), whose store holds its observations
                store = SimpleNamespace(data_on_device_via_torch={Constants.OBSERVATIONS: x[None]}.__getitem__)
                own = map_tensors(lambda t: t[0], p.inputs.compose(own[None], store, False, False))
            if p.carried is None:
                head_outputs, _ = p.model(own)
            else:
                if t == 0 or p.tag not in states:
                    states[p.tag] = p.carried.initial[0].clone()
                (head_outputs, _), states[p.tag] = p.model(own, states[p.tag])
            cols = [probs.argmax(-1) if deterministic else torch.multinomial(probs, 1, generator=generator).squeeze(-1)
                    for probs in head_outputs]
            out[p.agent_ids, : len(cols)] = torch.stack(cols, -1).cpu().numpy()
        return out

    return policy


class RolloutRenderCallbackBase:
    """Renders one episode with the current policies every ``every_n_epochs`` epochs (rank 0).

    The episode runs on the host, on a fresh env (``env_factory``) stepped by its NumPy reference step, with the
    engine's models choosing the actions; the env's render hook draws it through
    :func:`warp_drive.utils.rollout_animation.render_episode` (the Tag envs have one). Needs matplotlib (and Pillow
    for GIFs): ``pip install matplotlib pillow`` (from a clone: ``pip install -e '.[viz]'``).

    Args:
        every_n_epochs: Period in epochs.
        dirpath: Output folder; default ``<trainer.log_dir or default_root_dir>/rollouts``.
        filename: Format string with ``{epoch}``; ``.gif`` or ``.mp4``.
        max_frames: Frames drawn (the episode is cut), None for the whole episode.
        deterministic: Greedy actions (else sampled with ``seed``).
        seed: Seed of sampled actions.
        fps: Frames per second of the animation.
        env_factory: ``() -> env`` building the host env; default: the engine env's class with
            the run config's ``env`` kwargs.
    """

    def __init__(self, every_n_epochs: int = 10, dirpath: str | Path | None = None,
                 filename: str = "rollout_epoch{epoch:04d}.gif", max_frames: int | None = 100,
                 deterministic: bool = True, seed: int = 0, fps: int = 10,
                 env_factory: Callable[[], Any] | None = None) -> None:
        super().__init__()
        if every_n_epochs < 1:
            raise ConfigError(f"every_n_epochs={every_n_epochs} must be >= 1")
        if max_frames is not None and max_frames < 2:
            raise ConfigError(f"max_frames={max_frames} must be >= 2 or None")
        self.every_n_epochs = every_n_epochs
        self.dirpath = Path(dirpath) if dirpath is not None else None
        self.filename = filename
        self.max_frames = max_frames
        self.deterministic = deterministic
        self.seed = seed
        self.fps = fps
        self.env_factory = env_factory
        self.paths: list[Path] = []

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        epoch = trainer.current_epoch
        if (epoch + 1) % self.every_n_epochs:
            return
        # trainer.log_dir is a collective under DDP: every rank asks before rank 0 renders alone
        folder = self.dirpath or Path(trainer.log_dir or trainer.default_root_dir) / "rollouts"
        if not trainer.is_global_zero:
            return
        path = self.render(_engine(pl_module), folder / self.filename.format(epoch=epoch), title=f"Tag, epoch {epoch}")
        self.paths.append(path)
        logger.info("rollout of epoch %d rendered to %s", epoch, path)

    def host_env(self, engine: Engine) -> Any:
        """A fresh host-side env for the NumPy rollout."""
        if self.env_factory is not None:
            return self.env_factory()
        cls = type(engine.env_wrapper.env)
        kwargs = dict(engine.config.env)
        if "env_backend" in inspect.signature(cls).parameters:
            kwargs.setdefault("env_backend", "cpu")
        return cls(**kwargs)

    def render(self, engine: Engine, path: str | Path, title: str = "Tag") -> Path:
        """Collect one episode with the engine's policies and animate it into ``path`` with the env's
        render hook (``render_rollout``; see :mod:`warp_drive.utils.rollout_animation`).

        Raises:
            ConfigError: The env has no NumPy step or nothing to draw (``render_state_names``).
            UsageError: The env has no renderer.
        """
        from warp_drive.testing.rollout_animation import collect_episode, render_episode

        env = self.host_env(engine)
        episode = collect_episode(env, numpy_policy(engine, self.deterministic, self.seed), seed=self.seed)
        if self.max_frames is not None:
            episode = episode.frames(slice(None, self.max_frames))
        return render_episode(env, episode, path, fps=self.fps, title=title)
