"""Checking a checkpoint's contents before anything is restored, as a config is checked.

A checkpoint that unpickles cleanly (weights-only, checksums intact) may still hold values no run
wrote: a negative, boolean or 2**70 iteration counter, a NaN timestep, a foreign random state, a
50 MB config, a data-store array of another dtype. :func:`check_contents` checks every field the
resume reads, on its own; :func:`check_against_run` checks what must fit the run being resumed (the
env arrays of the data store, the policies' agents). The first bad field is named in a one-line
:class:`~warp_drive.errors.CheckpointError` with ``reason="corrupt"`` (exit 4; a run folder's
newest checkpoint that fails falls back to the previous intact one, see
:func:`~warp_drive.training.run.checkpoint.resolve_checkpoint`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from warp_drive.utils.checks import MAX_INT, as_path
from warp_drive.errors import CheckpointError, ConfigError
from warp_drive.training.checkpoint_files import checkpoint_error
from warp_drive.utils.excerpt import brief, excerpt

logger = logging.getLogger(__name__)

#: Largest per-policy timestep (env steps x agents) a checkpoint may hold.
MAX_TIMESTEP = 2**62
#: Most processes a checkpoint may say it was written by.
MAX_WORLD_SIZE = 1 << 16
#: Largest saved run config (characters of its JSON form): a config is a few KB.
MAX_CONFIG_CHARS = 1 << 20
#: The legacy format of TrainerDDPG's checkpoints (:mod:`warp_drive.training.run.trainer271`).
DDPG_LEGACY = "ddpg-1"


class _Fields:
    """The checks of one checkpoint: each raises the one-line error naming its field."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def fail(self, field: str, value: Any, expected: str, reason: str = "corrupt", raw: bool = False) -> CheckpointError:
        shown = "(missing)" if value is _MISSING else str(value) if raw else brief(value, 60)
        return checkpoint_error(f"checkpoint {str(self.path)!r}: `{field}`={shown} {expected} (not what a run writes: a "
                                "tampered or foreign file); resume from another checkpoint of the run, or start a new run",
                                reason, self.path)

    def get(self, section: Mapping[str, Any], key: str, field: str) -> Any:
        if key not in section:
            raise self.fail(field, _MISSING, "is missing")
        return section[key]

    def mapping(self, value: Any, field: str, *, optional: bool = False) -> Mapping[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(field, value, "must be a mapping")
        return value

    def integer(self, value: Any, field: str, minimum: int, maximum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(field, value, "must be an integer")
        if not minimum <= value <= maximum:
            raise self.fail(field, value, f"is out of range; expected {minimum} <= value <= {maximum}")
        return value

    def tensor(self, value: Any, field: str, *, dtype: torch.dtype | None = None, integer: bool = False) -> torch.Tensor:
        if not isinstance(value, torch.Tensor):
            raise self.fail(field, value, "must be a tensor")
        if dtype is not None and value.dtype != dtype:
            raise self.fail(field, value.dtype, f"is the wrong dtype; expected {dtype}")
        if integer and (value.is_floating_point() or value.is_complex()):
            raise self.fail(field, value.dtype, "is the wrong dtype; expected an integer dtype")
        return value

    def tensors(self, value: Any, field: str, count: int) -> None:
        if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != count:
            raise self.fail(field, value, f"must be a list of {count} tensors")
        for i, item in enumerate(value):
            self.tensor(item, f"{field}[{i}]")

    def random_state(self, value: Any, field: str) -> None:
        state = self.tensor(value, field, dtype=torch.uint8)
        size = torch.get_rng_state().numel()
        if state.dim() != 1 or state.numel() != size:
            raise self.fail(field, tuple(state.shape), f"is the wrong size for a random generator state; expected ({size},)")


_MISSING = object()


def _name(key: Any) -> str:
    """A key as a dotted field shows it: a string as is (cut), anything else as its repr."""
    return excerpt(key, 60) if isinstance(key, str) else brief(key, 40)


def check_contents(state: Mapping[str, Any], path: str | Path) -> None:
    """Checks each field of a trainer checkpoint (:meth:`Engine.state_dict`, or TrainerDDPG's legacy
    format) that a resume reads: types, ranges and sizes.

    Raises:
        CheckpointError: ``reason="corrupt"``, naming the first bad field.
    """
    f = _Fields(path)
    f.integer(f.get(state, "iteration", "iteration"), "iteration", 0, MAX_INT)
    seed = f.get(state, "seed", "seed")
    if seed is not None:
        f.integer(seed, "seed", 0, 2**63 - 1)
    _check_perf(f, state.get("perf"))
    legacy = state.get("format") == DDPG_LEGACY
    policies = f.mapping(f.get(state, "policies", "policies"), "policies")
    if not policies:
        raise f.fail("policies", {}, "holds no policy")
    for tag, policy in policies.items():
        where = f"policies.{_name(tag)}"
        if not isinstance(tag, str):
            raise f.fail("policies", tag, "has a policy tag that is not a string")
        policy = f.mapping(policy, where)
        f.integer(f.get(policy, "timestep", f"{where}.timestep"), f"{where}.timestep", 0, MAX_TIMESTEP)
        if legacy:
            f.mapping(f.get(policy, "nets", f"{where}.nets"), f"{where}.nets")
            f.tensors(f.get(policy, "episode_carry", f"{where}.episode_carry"), f"{where}.episode_carry", 2)
            continue
        # the network every policy saves: A2C/PPO's and DDPG's `model` (DDPG's critic under `nets`), SAC's `actor`
        net = "model" if "model" in policy or "actor" not in policy else "actor"
        f.mapping(f.get(policy, net, f"{where}.{net}"), f"{where}.{net}")
        ids = policy.get("agent_ids")
        if ids is not None and (not isinstance(ids, list) or not ids
                                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_INT for i in ids)):
            raise f.fail(f"{where}.agent_ids", ids, "must be a non-empty list of agent indices (integers >= 0)")
    if legacy:
        f.random_state(f.get(state, "generator", "generator"), "generator")
        _check_env_state(f, state, "")
        return
    f.integer(state.get("world_size", 1), "world_size", 1, MAX_WORLD_SIZE)
    _check_config(f, f.get(state, "config", "config"))
    if state.get("run_dir") is not None:
        try:
            as_path(state["run_dir"], "run_dir")
        except ConfigError as err:
            raise f.fail("run_dir", state["run_dir"], f"is not a folder path ({err})") from None
    rng = f.mapping(f.get(state, "rng", "rng"), "rng")
    for key in ("torch", "generator"):
        f.random_state(f.get(rng, key, f"rng.{key}"), f"rng.{key}")
    cuda = rng.get("cuda")
    if cuda is not None:
        if not isinstance(cuda, list):
            raise f.fail("rng.cuda", cuda, "must be a list of random generator states (or null)")
        for i, item in enumerate(cuda):
            f.tensor(item, f"rng.cuda[{i}]", dtype=torch.uint8)
    rank_state = f.get(state, "rank_state", "rank_state")
    if rank_state is not None:
        check_rank_state(rank_state, path)


def check_rank_state(rank_state: Any, path: str | Path) -> None:
    """Checks one rank's env state (:meth:`Engine.rank_state_dict`: rank 0's inside its checkpoint, the others'
    in ``<checkpoint>.rank<r>.pt``), as :func:`check_contents` does."""
    f = _Fields(path)
    rank_state = f.mapping(rank_state, "rank_state")
    _check_env_state(f, rank_state, "rank_state.")
    counters = f.mapping(f.get(rank_state, "sampler_counters", "rank_state.sampler_counters"),
                         "rank_state.sampler_counters")
    for name, value in counters.items():
        field = f"rank_state.sampler_counters.{_name(name)}"
        if not isinstance(name, str) or not name.rpartition("/")[2].isdigit():
            raise f.fail(field, name, "is not an `<action>/<head>` counter name")
        f.tensor(value, field, integer=True)
    carry = f.mapping(f.get(rank_state, "episode_carry", "rank_state.episode_carry"), "rank_state.episode_carry")
    for tag, value in carry.items():
        f.tensors(value, f"rank_state.episode_carry.{_name(tag)}", 2)
    for tag, value in f.mapping(rank_state.get("episode_sums"), "rank_state.episode_sums", optional=True).items():
        f.tensors(value, f"rank_state.episode_sums.{_name(tag)}", 3)


def _check_perf(f: _Fields, perf: Any) -> None:
    for key, value in f.mapping(perf, "perf", optional=True).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
            raise f.fail(f"perf.{_name(key)}", value, "must be a finite number >= 0")


def _check_config(f: _Fields, config: Any) -> None:
    config = f.mapping(config, "config")
    try:
        size = len(json.dumps(config, default=str))
    except (TypeError, ValueError, RecursionError):
        raise f.fail("config", config, "is not plain data (a run config as a mapping)") from None
    if size > MAX_CONFIG_CHARS:
        raise f.fail("config", f"<{size:,} characters>", f"is too large; a run config is a few KB (at most "
                     f"{MAX_CONFIG_CHARS:,})", raw=True)


def _check_env_state(f: _Fields, section: Mapping[str, Any], prefix: str) -> None:
    store = f.mapping(f.get(section, "data_store", f"{prefix}data_store"), f"{prefix}data_store")
    for name, value in store.items():
        f.tensor(value, f"{prefix}data_store.{_name(name)}")
    f.mapping(f.get(section, "env_resetter", f"{prefix}env_resetter"), f"{prefix}env_resetter")
    started = f.get(section, "started", f"{prefix}started")
    if not isinstance(started, bool):
        raise f.fail(f"{prefix}started", started, "must be true or false")


def check_against_run(state: Mapping[str, Any], path: str | Path, arrays: Mapping[str, torch.Tensor],
                      agent_ids: Mapping[str, Sequence[int]], world_size: int) -> None:
    """Checks what of a (content-checked) checkpoint must fit the run that resumes it: the env arrays
    of its data store (``arrays``: this run's, by name; the same names, dtypes and shapes) and each
    policy's agents (``agent_ids``). A checkpoint of another world size is said to start fresh episodes.

    Raises:
        CheckpointError: a data-store entry missing, extra or of another dtype or shape (``reason="corrupt"``);
            a policy over other agents (``reason="mismatch"``).
    """
    f = _Fields(path)
    for tag, ids in agent_ids.items():
        saved = state["policies"][tag].get("agent_ids")
        if saved is not None and list(saved) != list(ids):
            raise f.fail(f"policies.{tag}.agent_ids", saved, f"differs from this run's agents {list(ids)} of policy "
                         f"'{tag}'; use the policy map the checkpoint was trained with", "mismatch")
    saved_world = state.get("world_size", 1)
    if saved_world != world_size:
        logger.warning("checkpoint %s was written by %d process(es), this run has %d: the env replicas start from fresh "
                       "episodes (weights, optimizers and counters are restored)", path, saved_world, world_size)
    rank_state = state.get("rank_state")
    if rank_state is None:
        return
    store = rank_state["data_store"]
    for name, live in arrays.items():
        field = f"rank_state.data_store.{name}"
        saved = store.get(name, _MISSING)
        if saved is _MISSING:
            raise f.fail(field, _MISSING, "is missing (this run's env has that array)")
        if saved.dtype != live.dtype or tuple(saved.shape) != tuple(live.shape):
            raise f.fail(field, f"{saved.dtype} {tuple(saved.shape)}", f"does not fit this run's array ({live.dtype} "
                         f"{tuple(live.shape)})")
    extra = sorted(set(store) - set(arrays))
    if extra:
        raise f.fail(f"rank_state.data_store.{_name(extra[0])}", store[extra[0]].dtype,
                     "is not an array of this run's env")
