"""The engine counters in a Lightning checkpoint.

Lightning saves the weights (``state_dict``) and the optimizer states of a
:class:`~warp_drive.training.lightning.module.WarpDriveModuleBase`; the rest of the run lives in its
engine: the iteration, the per-policy timesteps, the return normalizers, the sampler seeds and
counters, the shuffle generator and the RNG states, per rank. The module stores
:func:`engine_state` under ``checkpoint[CHECKPOINT_KEY]`` and hands it back to
:func:`restore_engine_state` on resume; outside ``Trainer.fit`` it loads the optimizer states of a
checkpoint with :func:`load_optimizer_states`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.engine import Engine
from warp_drive.training.utils.minibatch import map_tensors

logger = logging.getLogger(__name__)

#: The entry of a Lightning checkpoint that holds the engine counters.
CHECKPOINT_KEY = "warp_drive"
#: Version of the layout of that entry.
CHECKPOINT_FORMAT = 1


def to_cpu(tree: Any) -> Any:
    """``tree`` with every tensor detached and copied to the CPU."""
    return map_tensors(lambda t: t.detach().cpu(), tree)


def optimizer_state_to(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Moves an optimizer's state tensors to ``device`` (Adam's ``step`` stays where it is)."""
    for state in optimizer.state.values():
        for key, value in state.items():
            if key != "step" and isinstance(value, torch.Tensor):
                state[key] = value.to(device)


def engine_state(engine: Engine, rank: int, distributed: bool) -> dict[str, Any]:
    """The engine counters as a checkpoint entry; every rank's own state when ``distributed``
    (collective then: call it on every rank)."""
    local: dict[str, Any] = {
        "rank": rank,
        **to_cpu(engine.random_state()),
        "algorithms": {tag: to_cpu(p.algorithm.state_dict()) for tag, p in engine.policies.items()},
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


def restore_engine_state(engine: Engine, state: Mapping[str, Any], rank: int, world_size: int) -> None:
    """Put the counters of :func:`engine_state` back into ``engine`` (rank ``rank`` of ``world_size``).

    A rank without a saved state of its own keeps its fresh sampler streams (with a warning).

    Raises:
        ConfigError: Another format version, or other policies or agents than the engine's.
    """
    if state.get("format_version") != CHECKPOINT_FORMAT:
        raise ConfigError(
            f"checkpoint engine state has format {state.get('format_version')}, expected {CHECKPOINT_FORMAT}")
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
    engine.load_progress(state["iteration"], state["timesteps"], state.get("perf"))
    for tag, algorithm_state in (mine or ranks[0])["algorithms"].items():
        engine.policies[tag].algorithm.load_state_dict(algorithm_state)
    if mine is None:
        return
    engine.load_random_state(mine)
    logger.info("engine restored at iteration %d", engine.iteration)


def load_optimizer_states(engine: Engine, trained: Sequence[str], states: Sequence[Mapping[str, Any]]) -> None:
    """Load a checkpoint's ``optimizer_states`` (in policy order) into the trained policies' optimizers.

    Raises:
        ConfigError: Not one state per trained policy.
    """
    if len(states) != len(trained):
        raise ConfigError(f"checkpoint has {len(states)} optimizer states for {len(trained)} trained policies")
    for tag, opt_state in zip(trained, states):
        engine.policies[tag].optimizer.load_state_dict(opt_state)
