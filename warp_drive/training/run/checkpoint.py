"""Checkpoints: weights, optimizer states, counters, RNG states, env replicas; atomic and safe to load.

A checkpoint is written at an iteration boundary only (by :meth:`Trainer.train`, or by a call of
:meth:`Trainer.save_checkpoint` between iterations), so its counters, weights, optimizer states,
env replicas and the metric rows on disk describe the same moment.

Each file is written and read by :mod:`warp_drive.training.checkpoint_files` (atomic, checksummed,
weights-only; its names are importable from here too). This module decides which checkpoint of a
run folder to resume from (a corrupt one falls back to the previous intact one) and whether it
fits the run.

Layout of a run folder: ``checkpoint_<iteration:08d>.pt`` per checkpoint, ``checkpoint_latest.pt``
(a copy of the newest), ``<tag>_<timestep>.state_dict`` policy files (2.7.1's format) and, for
ranks r > 0 of a distributed run, ``<checkpoint>.rank<r>.pt`` with that rank's env replicas.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from warp_drive.errors import CheckpointError
from warp_drive.training.run.checkpoint_check import check_contents, check_rank_state
from warp_drive.training.checkpoint_files import (  # noqa: F401  (the names callers know checkpoint's files by)
    READABLE_VERSIONS,
    atomic_save,
    checkpoint_error,
    load_state_dict_file,
    policy_file_state,
    safe_load,
    timestep_from_filename,
    verify_archive,
    write_policy_files,
)
from warp_drive.utils.excerpt import excerpt

logger = logging.getLogger(__name__)

LATEST = "checkpoint_latest.pt"
_NUMBERED = re.compile(r"^checkpoint_(\d+)\.pt$")


# ----------------------------------------------------------------------------- files
def plain(obj: Any) -> Any:
    """``obj`` with NumPy arrays and scalars turned into tensors and numbers, paths into strings,
    tuples and sets into lists: what ``torch.load(weights_only=True)`` reads back."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj).copy())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Mapping):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(plain(v) for v in obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in a checkpoint")  # internal invariant


def rank_path(path: Path, rank: int) -> Path:
    """Where rank ``rank`` (> 0) keeps its own state next to the checkpoint ``path``."""
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def numbered_checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """``[(iteration, path)]`` of the ``checkpoint_<iteration>.pt`` files in ``folder``, newest first."""
    matches = ((_NUMBERED.match(p.name), p) for p in Path(folder).glob("checkpoint_*.pt"))
    return sorted(((int(m.group(1)), p) for m, p in matches if m), reverse=True)


# ----------------------------------------------------------------------------- saving
def write_checkpoint(path: Path, save_dir: Path, state: Mapping[str, Any],
                     policy_files: Mapping[str, tuple[int, torch.nn.Module]]) -> Path:
    """Rank 0: write an engine's state (:meth:`Engine.state_dict`, its own env state included) and
    its policy files; in its run folder also refresh ``checkpoint_latest.pt``.

    Call it between iterations; every other rank calls :func:`write_rank_state` at the same time.
    """
    data = plain(state)
    atomic_save(data, path)
    if path.parent == save_dir:
        atomic_save(data, save_dir / LATEST)
    write_policy_files(save_dir, policy_files)
    logger.info("checkpoint written: %s", path)
    return path


def write_rank_state(path: Path, save_dir: Path, rank: int, rank_state: Mapping[str, Any]) -> Path:
    """Rank ``rank`` > 0: write its own env state (:meth:`Engine.rank_state_dict`) to
    ``<name>.rank<r>.pt`` next to rank 0's checkpoint ``path``."""
    own = plain(rank_state)
    atomic_save(own, rank_path(path, rank))
    if path.parent == save_dir:
        atomic_save(own, rank_path(save_dir / LATEST, rank))
    return path


# ----------------------------------------------------------------------------- finding and checking
def _read_trainer_state(path: Path) -> dict:
    state = safe_load(path, "cpu", "checkpoint")
    if not isinstance(state, Mapping) or "policies" not in state:
        raise checkpoint_error(f"{str(path)!r} is not a trainer checkpoint (no 'policies'); policy weights files "
                     "(<tag>_<timestep>.state_dict) load through policy.<tag>.model.model_ckpt_filepath", "corrupt", path)
    if state.get("format_version") not in READABLE_VERSIONS and state.get("format") != "ddpg-1":  # TrainerDDPG's
        raise checkpoint_error(f"checkpoint {str(path)!r} has format {state.get('format_version')}; this version reads "
                     f"{', '.join(map(str, READABLE_VERSIONS))}", "format", path)
    check_contents(state, path)
    return dict(state)


def resolve_checkpoint(path: str | Path) -> tuple[Path, dict]:
    """The newest intact checkpoint at ``path`` and its contents, read safely.

    ``path`` is a checkpoint file or a run folder. For a folder (or its ``checkpoint_latest.pt``)
    the newest readable checkpoint is used: ``checkpoint_latest.pt``, or a numbered checkpoint of
    a later iteration if one exists; a corrupt or truncated one is named in a warning and the
    previous intact one is used.

    Raises:
        CheckpointError: nothing to resume from, an explicitly named file that is missing or
            corrupt, or a file refused as unsafe (never skipped silently).
    """
    path = Path(path)
    if not path.is_dir() and path.name != LATEST:
        return path, _read_trainer_state(path)
    folder = path if path.is_dir() else path.parent
    if not folder.is_dir():
        raise checkpoint_error(f"cannot resume from {str(path)!r}: no such file or folder", "missing", path)
    numbered = numbered_checkpoints(folder)
    latest = folder / LATEST
    skipped: list[str] = []
    first_error: list[str] = []

    def attempt(candidate: Path) -> dict | None:
        try:
            return _read_trainer_state(candidate)
        except CheckpointError as err:
            if getattr(err, "reason", "") != "corrupt":
                raise
            logger.warning("%s; falling back to the previous checkpoint", err)
            skipped.append(candidate.name)
            first_error.append(excerpt(str(err), 300))
            return None

    chosen: tuple[Path, dict] | None = None
    if latest.is_file() and (state := attempt(latest)) is not None:
        chosen = (latest, state)
    for iteration, candidate in numbered:
        if chosen is not None and iteration <= int(chosen[1]["iteration"]):
            break  # checkpoint_latest.pt is at least as new
        if (state := attempt(candidate)) is not None:
            chosen = (candidate, state)
            break
    if chosen is None:
        if skipped:
            raise checkpoint_error(f"no intact checkpoint in {str(folder)!r}: {', '.join(skipped)} are corrupt, truncated "
                                   f"or invalid (first: {first_error[0]})", "corrupt", folder)
        raise checkpoint_error(f"no checkpoint in {str(folder)!r} (no {LATEST} or checkpoint_<iteration>.pt); pass a "
                     "checkpoint file or the run folder of a run that saved one", "missing", folder)
    if skipped:
        logger.warning("resuming from %s (iteration %d) instead of the unreadable %s", chosen[0],
                       int(chosen[1]["iteration"]), ", ".join(skipped))
    return chosen


#: Config keys that must be equal to resume: they fix the shapes of the saved weights and env state.
def _shape_keys(cfg: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {f"env.{k}": v for k, v in dict(cfg.get("env", {})).items()}
    out["trainer.num_envs"] = cfg.get("trainer", {}).get("num_envs")
    policies = dict(cfg.get("policy", {}))
    out["policy tags"] = sorted(policies)
    for tag, section in policies.items():
        for key, value in dict(section.get("model", {})).items():
            if key != "model_ckpt_filepath":
                out[f"policy.{tag}.model.{key}"] = value
    return json.loads(json.dumps(out, default=str))  # tuples -> lists: compare values, not types


def config_differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``["key: checkpoint X, now Y", ...]`` for the env, model and num_envs keys that differ."""
    a, b = _shape_keys(saved), _shape_keys(current)
    missing = object()
    show = lambda v: "(unset)" if v is missing else json.dumps(v)  # noqa: E731
    pairs = {key: (a.get(key, missing), b.get(key, missing)) for key in sorted(set(a) | set(b))}
    return [f"{key}: checkpoint {show(va)}, now {show(vb)}" for key, (va, vb) in pairs.items() if va != vb]


#: Differing keys a resume-mismatch message names (the others are counted).
MAX_DIFFERENCES_SHOWN = 6


def check_resume_compatible(state: Mapping[str, Any], config: Any, path: str | Path) -> None:
    """Fails up front when the run's env, model or ``num_envs`` differs from the checkpoint's.

    Raises:
        CheckpointError: naming the differing keys with both values (the first
            :data:`MAX_DIFFERENCES_SHOWN`, each cut to 120 characters; the rest counted).
    """
    current = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    diffs = config_differences(state.get("config", {}), current)
    if diffs:
        shown = [excerpt(d, 120) for d in diffs[:MAX_DIFFERENCES_SHOWN]]
        more = len(diffs) - len(shown)
        raise checkpoint_error(f"cannot resume from {str(path)!r}: {len(diffs)} env, model or num_envs setting"
                               f"{'s differ' if len(diffs) > 1 else ' differs'} from the checkpoint's: " + "; ".join(shown)
                               + (f"; and {more} more" if more else "")
                               + ". Resume with the checkpoint's settings, or start a new run", "mismatch", Path(path))


# ----------------------------------------------------------------------------- loading
def read_checkpoint(path: str | Path, state: Mapping[str, Any] | None, config: Any, policy_tags: list[str],
                    rank: int, world_size: int) -> tuple[Path, dict]:
    """The checkpoint to resume from and its contents, checked against the run, with this rank's
    own env state under ``"rank_state"`` (None: none saved for this rank or world size).

    ``path`` is a checkpoint file or a run folder (see :func:`resolve_checkpoint`); ``state`` is
    its already-read contents, if the caller has them.

    Raises:
        CheckpointError: see :func:`resolve_checkpoint` and :func:`check_resume_compatible`; other
            policies than ``policy_tags``.
    """
    if state is None:
        path, state = resolve_checkpoint(path)
    path = Path(path)
    check_resume_compatible(state, config, path)
    if set(policy_tags) != set(state["policies"]):
        raise checkpoint_error(f"checkpoint {str(path)!r} has policies {sorted(state['policies'])}, the trainer "
                               f"{sorted(policy_tags)}; use the policy map the checkpoint was trained with", "mismatch",
                               path)
    rank_state = state["rank_state"]
    if rank != 0:
        own = rank_path(path, rank)
        rank_state = safe_load(own, "cpu", "checkpoint") if own.is_file() else None
        if rank_state is not None:
            check_rank_state(rank_state, own)
    if state.get("world_size", 1) != world_size:
        rank_state = None  # the env replicas were split differently: start from fresh episodes
    return path, {**state, "rank_state": rank_state}
