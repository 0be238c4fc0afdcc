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
    write_policy_files(trainer)
    logger.info("checkpoint written: %s", path)
    return path


def policy_file_state(model: torch.nn.Module) -> dict:
    """What a ``<tag>_<timestep>.state_dict`` file holds: 2.7.1's parameter names for our fully
    connected categorical policies (so 2.7.1 loads them too), the model's own names otherwise."""
    from warp_drive.training.models.fully_connected import FullyConnected
    from warp_drive.training.models.reference_format import to_reference_state_dict

    model = _model(model)
    if isinstance(model, FullyConnected) and not model.action_spec.is_gaussian:
        return to_reference_state_dict(model)
    return model.state_dict()


def write_policy_files(trainer: Any) -> list[Path]:
    """Writes ``<save_dir>/<tag>_<timestep>.state_dict`` for every policy (2.7.1's names and layout)."""
    save_dir = Path(trainer.save_dir)
    paths = []
    for tag, p in trainer.policies.items():
        path = save_dir / f"{tag}_{p.timestep}.state_dict"
        atomic_save({k: v.detach().cpu() for k, v in policy_file_state(p.model).items()}, path)  # loads anywhere
        paths.append(path)
    return paths


def timestep_from_filename(path: str | Path) -> int | None:
    """The timestep 2.7.1 encodes in ``<tag>_<timestep>.state_dict`` names, or None if there is none."""
    stem = Path(path).name.split(".state_dict")[0]
    tail = stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


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
    """Model weights from a ``.state_dict`` file (ours or 2.7.1's), read with ``weights_only=True``."""
    from warp_drive.training.models.reference_format import load_policy_file

    return load_policy_file(path, device)
