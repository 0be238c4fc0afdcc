"""Checkpoints: weights, optimizer states, counters and RNG states, written atomically."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
LATEST = "checkpoint_latest.pt"


def atomic_save(obj: Any, path: Path) -> None:
    """``torch.save`` to a temporary file in the same directory, then rename into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp_", suffix=".pt")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _model(m: torch.nn.Module) -> torch.nn.Module:
    return getattr(m, "module", m)  # unwrap DistributedDataParallel: no 'module.' prefixes


def _rank_state(trainer: Any) -> dict:
    """What differs between ranks: the env replicas, reset-pool and sampler counters, episode carry."""
    return {
        "sampler_counters": trainer.sampler.counters_state(),
        # the env replicas themselves, so a resumed run continues the same episodes
        "data_store": trainer.env_wrapper.cuda_data_manager.state_dict(),
        "env_resetter": trainer.env_wrapper.env_resetter.state_dict(),
        "episode_carry": {tag: (p.stats.running_return.cpu(), p.stats.running_length.cpu())
                          for tag, p in trainer.policies.items()},
        "started": trainer.started,
    }


def rank_path(path: Path, rank: int) -> Path:
    """Where rank ``rank`` (> 0) keeps its own state next to the checkpoint ``path``."""
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def save_trainer(trainer: Any, path: str | Path | None = None) -> Path:
    """Write the trainer's full state; also refresh ``checkpoint_latest.pt``.

    Call it on every rank: rank 0 writes the shared state (weights, optimizers, counters, RNG)
    and its own env state; every other rank writes only its env state to ``<name>.rank<r>.pt``.
    """
    save_dir = Path(trainer.save_dir)
    path = Path(path) if path else save_dir / f"checkpoint_{trainer.iteration:08d}.pt"
    if trainer.rank != 0:
        own = _rank_state(trainer)
        atomic_save(own, rank_path(path, trainer.rank))
        if path.parent == save_dir:
            atomic_save(own, rank_path(save_dir / LATEST, trainer.rank))
        return path
    state = {
        "format_version": FORMAT_VERSION,
        "iteration": trainer.iteration,
        "seed": trainer.seed,
        "world_size": trainer.num_devices,
        "config": trainer.config.to_dict(),
        "policies": {
            tag: {
                "model": _model(p.model).state_dict(),
                "optimizer": p.optimizer.state_dict(),
                "algorithm": p.algorithm.state_dict(),
                "timestep": p.timestep,
                "agent_ids": p.agent_ids,
            }
            for tag, p in trainer.policies.items()
        },
        "sampler": {"seed": trainer.sampler.seed},
        "rank_state": _rank_state(trainer),
        "rng": {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "generator": trainer.generator.get_state(),
        },
        "perf": dict(trainer.perf),
    }
    atomic_save(state, path)
    if path.parent == save_dir:
        atomic_save(state, save_dir / LATEST)
    for tag, p in trainer.policies.items():  # reference-style per-policy weight files
        atomic_save(_model(p.model).state_dict(), save_dir / f"{tag}_{p.timestep}.state_dict")
    logger.info("checkpoint written: %s", path)
    return path


def load_trainer(trainer: Any, path: str | Path) -> None:
    """Restore a trainer from :func:`save_trainer` output (same policies and shapes)."""
    path = Path(path)
    if path.is_dir():
        path = path / LATEST
    if not path.is_file():
        raise ConfigError(f"checkpoint {str(path)!r} does not exist")
    state = torch.load(path, map_location=trainer.device, weights_only=False)
    if state.get("format_version") != FORMAT_VERSION:
        raise ConfigError(f"checkpoint {path} has format {state.get('format_version')}, expected {FORMAT_VERSION}")
    missing = set(trainer.policies) ^ set(state["policies"])
    if missing:
        raise ConfigError(f"checkpoint policies {sorted(state['policies'])} differ from the trainer's {sorted(trainer.policies)}")
    for tag, p in trainer.policies.items():
        s = state["policies"][tag]
        _model(p.model).load_state_dict(s["model"])
        p.optimizer.load_state_dict(s["optimizer"])
        p.algorithm.load_state_dict(s["algorithm"])
        p.timestep = int(s["timestep"])
    trainer.iteration = int(state["iteration"])
    trainer.sampler.init_random(trainer.rank_seed)
    torch.set_rng_state(state["rng"]["torch"].cpu())
    if state["rng"]["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["rng"]["cuda"]])
    trainer.generator.set_state(state["rng"]["generator"].cpu())
    rank_state = state["rank_state"]
    if trainer.rank != 0:
        own = rank_path(path, trainer.rank)
        rank_state = torch.load(own, map_location="cpu", weights_only=False) if own.is_file() else None
    if rank_state is None or state.get("world_size", 1) != trainer.num_devices:
        trainer.started = False  # no env state for this rank: start from fresh episodes
    else:
        trainer.sampler.load_counters_state(rank_state["sampler_counters"])
        trainer.env_wrapper.cuda_data_manager.load_state_dict(rank_state["data_store"])
        trainer.env_wrapper.env_resetter.load_state_dict(rank_state["env_resetter"])
        for tag, (ret, length) in rank_state["episode_carry"].items():
            trainer.policies[tag].stats.running_return.copy_(ret)
            trainer.policies[tag].stats.running_length.copy_(length)
        trainer.started = bool(rank_state["started"])
    logger.info("resumed from %s at iteration %d", path, trainer.iteration)


def load_state_dict_file(path: str | Path, device: torch.device) -> dict:
    """Model weights from a ``.state_dict`` file or from a full trainer checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"model_ckpt_filepath {str(path)!r} does not exist")
    obj = torch.load(path, map_location=device, weights_only=False)
    if isinstance(obj, dict) and "policies" in obj and "format_version" in obj:
        raise ConfigError(f"{path} is a trainer checkpoint; load it with Trainer.load_checkpoint() or --resume")
    return {k.removeprefix("module."): v for k, v in obj.items()}
