"""Callbacks for :class:`~warp_drive.training.lightning.module.WarpDriveModule` runs.

* :class:`PerfStatsCallback`: per-epoch wall time and env steps per second (device-synchronized).
* :class:`EpisodeReturnLogger`: episode returns every N epochs (training episodes, and optionally
  a greedy evaluation of the current policies).
* :class:`RolloutRenderCallback`: a GIF/MP4 of one Tag episode with the current policies every N
  epochs, via :mod:`warp_drive.utils.rollout_animation`.

Each is also an example of a user callback: it reads the engine through ``pl_module.engine``
and logs through ``pl_module.log``.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from warp_drive.errors import ConfigError
from warp_drive.training.lightning._compat import L

if TYPE_CHECKING:  # pragma: no cover
    from warp_drive.training.trainer import Trainer

logger = logging.getLogger(__name__)


def _engine(pl_module: L.LightningModule) -> Trainer:
    engine = getattr(pl_module, "engine", None)
    if engine is None:
        raise ConfigError(f"{type(pl_module).__name__} has no engine: these callbacks need a WarpDriveModule")
    return engine


def _synchronize(engine: Trainer) -> None:
    dev = torch.device(engine.device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


class PerfStatsCallback(L.Callback):
    """Logs per-epoch wall time and throughput, measured between device synchronizations.

    Logged each epoch (averaged over ranks): ``perf/epoch_ms``, ``perf/iteration_ms`` and, summed
    over ranks, ``perf/epoch_env_steps_per_s`` and ``perf/epoch_agent_steps_per_s``. Every row is
    also kept in :attr:`history`.

    Args:
        synchronize: Wait for the device at epoch boundaries (exact times; one sync per epoch).
        log_metrics: Also ``pl_module.log`` the values (else only :attr:`history`).
    """

    def __init__(self, synchronize: bool = True, log_metrics: bool = True) -> None:
        super().__init__()
        self.synchronize = synchronize
        self.log_metrics = log_metrics
        self.history: list[dict[str, float]] = []
        self._t0 = 0.0
        self._it0 = 0

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        engine = _engine(pl_module)
        if self.synchronize:
            _synchronize(engine)
        self._t0 = time.perf_counter()
        self._it0 = int(engine.iteration)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
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


class EpisodeReturnLogger(L.Callback):
    """Reports mean episode returns per policy every ``every_n_epochs`` epochs.

    Reads the training-episode means of the epoch (``pl_module.episode_metrics``, one host sync)
    and, with ``evaluate=True``, also rolls out ``num_episodes`` full episodes per env with the
    current policies (``Trainer.evaluate_episodes``; greedy when ``deterministic``) and logs
    ``eval/<tag>/episode_return_mean``. Evaluation force-resets the envs, so training continues
    from fresh episodes. Rows are kept in :attr:`history` and written to the Python log on rank 0.

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

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
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
            results = engine.evaluate_episodes(deterministic=self.deterministic, num_episodes=self.num_episodes)
            local = {f"eval/{tag}/episode_return_mean": float(np.mean(r["episode_return"])) if len(r["episode_return"])
                     else float("nan") for tag, r in results.items()}
            pl_module.log_dict(local, on_step=False, on_epoch=True, batch_size=1, sync_dist=trainer.world_size > 1)
            row.update(local)
        self.history.append(row)
        if trainer.is_global_zero:
            logger.info("epoch %d (iteration %d): %s", epoch, engine.iteration,
                        ", ".join(f"{k} {v:.4g}" for k, v in row.items() if "/" in k))


def numpy_policy(engine: Trainer, deterministic: bool = True, seed: int = 0) -> Callable[[np.ndarray, int], np.ndarray]:
    """The engine's policies as ``policy(obs (N, obs_dim), t) -> actions (N, heads)`` for host rollouts.

    Raises:
        ConfigError: A policy has a Gaussian (Box) action head; host rollouts here are categorical.
    """
    policies = list(engine.policies.values())
    for p in policies:
        if p.action_spec.is_gaussian:
            raise ConfigError(f"policy '{p.tag}' has continuous actions; numpy_policy supports categorical heads only")
    heads = max(len(p.action_spec.categorical) for p in policies)
    num_agents = engine.env_wrapper.n_agents
    device = torch.device(engine.device)
    generator = torch.Generator(device=device).manual_seed(seed)

    @torch.no_grad()
    def policy(obs: np.ndarray, t: int) -> np.ndarray:
        out = np.zeros((num_agents, heads), np.int32)
        x = torch.as_tensor(np.asarray(obs, np.float32), device=device)
        for p in policies:
            ids = torch.as_tensor(p.agent_ids, device=device)
            head_outputs, _ = p.model(x.index_select(0, ids))
            cols = [probs.argmax(-1) if deterministic else torch.multinomial(probs, 1, generator=generator).squeeze(-1)
                    for probs in head_outputs]
            out[p.agent_ids, : len(cols)] = torch.stack(cols, -1).cpu().numpy()
        return out

    return policy


class RolloutRenderCallback(L.Callback):
    """Renders one Tag episode with the current policies every ``every_n_epochs`` epochs (rank 0).

    The episode runs on the host, on a fresh env built from the run config's ``env`` section
    (the env's NumPy reference step), with the engine's models choosing the actions; it is drawn
    with :func:`warp_drive.utils.rollout_animation.render_episode`. Needs matplotlib (and Pillow
    for GIFs): ``pip install 'warpdrive-marl[viz]'``.

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

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
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

    def host_env(self, engine: Trainer) -> Any:
        """A fresh host-side env for the NumPy rollout."""
        if self.env_factory is not None:
            return self.env_factory()
        cls = type(engine.env_wrapper.env)
        kwargs = dict(engine.config.env)
        if "env_backend" in inspect.signature(cls).parameters:
            kwargs.setdefault("env_backend", "cpu")
        return cls(**kwargs)

    def render(self, engine: Trainer, path: str | Path, title: str = "Tag") -> Path:
        """Collect one episode with the engine's policies and animate it into ``path``.

        Raises:
            ConfigError: The env is not a Tag env (no NumPy step or positions).
        """
        from warp_drive.utils.rollout_animation import (
            collect_tag_episode,
            render_episode,
        )

        env = self.host_env(engine)
        if not (hasattr(env, "numpy_step") and hasattr(env, "is_tagger") and hasattr(env, "grid_length")):
            raise ConfigError(f"RolloutRenderCallback renders Tag envs (numpy_step, is_tagger, grid_length); "
                              f"{type(env).__name__} is not one")
        episode = collect_tag_episode(env, numpy_policy(engine, self.deterministic, self.seed), seed=self.seed)
        if self.max_frames is not None:
            n = self.max_frames
            episode = dataclasses.replace(episode, loc_x=episode.loc_x[:n], loc_y=episode.loc_y[:n],
                                          still_in_the_game=episode.still_in_the_game[:n],
                                          rewards=episode.rewards[: n - 1])
        return render_episode(episode, path, fps=self.fps, title=title)

