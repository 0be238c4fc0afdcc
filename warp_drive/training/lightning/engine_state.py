"""The engine's part of a Lightning checkpoint: counters, random streams and policy state.

Lightning saves the weights (``state_dict``: the networks registered as ``policy_models``) and the
optimizer states of a :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase`; the rest
of the run lives in its engine: the iteration, the per-policy timesteps, the sampler seeds and
counters, the shuffle generator and the RNG states, and each policy's own state
(``Policy.state_dict()``: target networks, exploration noise, return normalizers, a replay ...),
per rank. The module stores :func:`engine_state` under ``checkpoint[CHECKPOINT_KEY]`` and hands
it back to :func:`restore_engine_state` on resume.

A policy's state names its weights and optimizer states too, which Lightning already saves: given
the checkpoint Lightning is writing, :func:`engine_state` stores each such tensor as a reference to
its place in the checkpoint (``{REF: ["state_dict", key]}``, ``{REF: ["optimizer_states", i, ...]}``)
instead of a second copy, and :func:`resolve_references` puts them back from the loaded
checkpoint; every policy then loads its whole state through ``Policy.load_state_dict``, whatever
its algorithm.

Formats of the entry (``format_version``): 2 (this one: ``ranks[r]["policies"]``); 1 (written for
A2C/PPO engines only: ``ranks[r]["algorithms"]``, each policy's ``algorithm`` entry) still loads.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.engine import Engine
from warp_drive.training.utils.minibatch import map_tensors

logger = logging.getLogger(__name__)

#: The entry of a Lightning checkpoint that holds the engine's part.
CHECKPOINT_KEY = "warp_drive"
#: Version of the layout of that entry.
CHECKPOINT_FORMAT = 2
#: Formats :func:`restore_engine_state` reads: 1 (A2C/PPO: each policy's ``algorithm`` state), 2.
READABLE_FORMATS = (1, 2)
#: The key of a reference to a tensor Lightning saves elsewhere in the checkpoint.
REF = "lightning_checkpoint_ref"
#: The entries of a Lightning checkpoint whose tensors a policy state may refer to.
_SAVED_BY_LIGHTNING = ("state_dict", "optimizer_states")


# ---------------------------------------------------------------------------- references
def _walk(tree: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], torch.Tensor]]:
    if isinstance(tree, torch.Tensor):
        yield path, tree
    elif isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from _walk(value, (*path, key))
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from _walk(value, (*path, i))


def _identity(t: torch.Tensor) -> tuple[Any, ...]:
    """Same memory, same view: the same tensor for a checkpoint."""
    return (t.device, t.data_ptr(), t.dtype, tuple(t.shape), tuple(t.stride()))


def saved_tensor_index(checkpoint: Mapping[str, Any] | None) -> dict[tuple[Any, ...], list[Any]]:
    """``{tensor identity: path}`` of the tensors Lightning saves in ``checkpoint`` (its weights and
    optimizer states); empty for None."""
    index: dict[tuple[Any, ...], list[Any]] = {}
    for entry in _SAVED_BY_LIGHTNING if checkpoint is not None else ():
        for path, t in _walk(checkpoint.get(entry), (entry,)):
            if t.numel() > 0:
                index.setdefault(_identity(t), list(path))
    return index


def refer_to_saved(tree: Any, index: Mapping[tuple[Any, ...], list[Any]]) -> Any:
    """``tree`` with each tensor found in ``index`` replaced by ``{REF: path}``, the rest on the CPU."""
    def leaf(t: torch.Tensor) -> Any:
        path = index.get(_identity(t)) if t.numel() > 0 else None
        return {REF: list(path)} if path is not None else t.detach().cpu()

    return map_tensors(leaf, tree)


def resolve_references(tree: Any, checkpoint: Mapping[str, Any]) -> Any:
    """``tree`` with every ``{REF: path}`` replaced by the checkpoint's value at ``path``.

    Raises:
        ConfigError: a reference to something the checkpoint lacks.
    """
    if isinstance(tree, Mapping):
        if set(tree) == {REF}:
            value: Any = checkpoint
            try:
                for key in tree[REF]:
                    value = value[key]
            except (KeyError, IndexError, TypeError) as err:
                raise ConfigError(f"the checkpoint's '{CHECKPOINT_KEY}' entry refers to {'/'.join(map(str, tree[REF]))}, "
                                  "which the checkpoint lacks (written with save_weights_only?)") from err
            return value
        return {k: resolve_references(v, checkpoint) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(resolve_references(v, checkpoint) for v in tree)
    return tree


# ---------------------------------------------------------------------------- save and restore
def engine_state(engine: Engine, rank: int, distributed: bool,
                 checkpoint: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The engine's checkpoint entry; every rank's own state when ``distributed`` (collective then: call it on
    every rank). ``checkpoint``: the Lightning checkpoint being written; the policies' tensors found in its
    ``state_dict`` and ``optimizer_states`` are stored as references."""
    index = saved_tensor_index(checkpoint)
    local: dict[str, Any] = {
        "rank": rank,
        **map_tensors(lambda t: t.detach().cpu(), engine.random_state()),
        "policies": {tag: refer_to_saved(p.state_dict(), index) for tag, p in engine.policies.items()},
    }
    ranks = [local]
    if distributed and torch.distributed.is_available() and torch.distributed.is_initialized():
        gathered: list[Any] = [None] * torch.distributed.get_world_size()
        torch.distributed.all_gather_object(gathered, local)
        ranks = sorted(gathered, key=lambda s: int(s["rank"]))
    return {
        "format_version": CHECKPOINT_FORMAT,
        "iteration": int(engine.iteration),
        "seed": int(engine.seed),
        "config": engine.config.to_dict(),
        "timesteps": {tag: int(p.timestep) for tag, p in engine.policies.items()},
        "agent_ids": {tag: list(p.agent_ids) for tag, p in engine.policies.items()},
        "perf": dict(engine.perf),
        "world_size": len(ranks),
        "ranks": ranks,
    }


def resolve_engine_state(state: Mapping[str, Any], checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` (the checkpoint's entry) with its references replaced by the checkpoint's tensors."""
    return resolve_references(state, {k: checkpoint.get(k) for k in _SAVED_BY_LIGHTNING})


def restore_engine_state(engine: Engine, state: Mapping[str, Any], rank: int, world_size: int) -> None:
    """Put the entry of :func:`engine_state` (references resolved: :func:`resolve_engine_state`)
    back into ``engine`` (rank ``rank`` of ``world_size``).

    A rank without a saved state of its own keeps its fresh sampler streams (with a warning), and
    takes the policy state of rank 0.

    Raises:
        ConfigError: An unknown format version, other policies or agents than the engine's, or a
            policy state that does not fit its policy.
    """
    version = state.get("format_version")
    if version not in READABLE_FORMATS:
        raise ConfigError(f"checkpoint engine state has format {version}, expected one of {READABLE_FORMATS}")
    if set(state["timesteps"]) != set(engine.policies):
        raise ConfigError(
            f"checkpoint policies {sorted(state['timesteps'])} differ from the engine's {sorted(engine.policies)}")
    for tag, ids in state.get("agent_ids", {}).items():
        if list(ids) != list(engine.policies[tag].agent_ids):
            raise ConfigError(
                f"policy '{tag}' had agents {ids} in the checkpoint but {engine.policies[tag].agent_ids} now")
    ranks = list(state["ranks"])
    mine = next((r for r in ranks if r["rank"] == rank), None)
    if mine is None or len(ranks) != world_size:
        logger.warning("checkpoint written by %d rank(s), restored on rank %d of %d: ranks without a saved "
                       "state keep their fresh sampler streams", len(ranks), rank, world_size)
    saved = mine or ranks[0]
    policies = saved["policies"] if version >= 2 else _format1_policies(engine, saved["algorithms"])
    for tag, policy_state in policies.items():
        try:
            engine.policies[tag].load_state_dict(policy_state)
        except (RuntimeError, ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"the checkpoint's state of policy '{tag}' does not fit it: {err}") from err
    engine.load_progress(state["iteration"], state["timesteps"], state.get("perf"))
    if mine is None:
        return
    engine.load_random_state(mine)
    logger.info("engine restored at iteration %d", engine.iteration)


def _format1_policies(engine: Engine, algorithms: Mapping[str, Any]) -> dict[str, Any]:
    """Format 1 held each policy's ``algorithm`` entry (return normalizers) only; Lightning restores
    the weights and optimizer states: the rest of each policy state stays as it is."""
    return {tag: {**engine.policies[tag].state_dict(), "algorithm": state} for tag, state in algorithms.items()}
