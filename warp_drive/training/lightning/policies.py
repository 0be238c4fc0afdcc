"""What the Lightning module asks of each policy of its engine, naming no algorithm.

Every policy answers through the algorithm seam (:class:`~warp_drive.training.algorithms.base.Policy`).
The module registers a policy's weight-file networks (``Policy.weight_files()``, :func:`policy_networks`)
as its submodules: one network as itself (``policy_models.<tag>.*``: an A2C/PPO model, the layout of
every checkpoint written before), several as a ``ModuleDict`` by role (``policy_models.<tag>.<role>.*``:
DDPG's actor and critic). Lightning saves their weights; the rest of the policy's state (target
networks, exploration noise, normalizers, a replay) travels in the engine entry of the checkpoint
(:mod:`~warp_drive.training.lightning.engine_state`). Parameters a policy's optimizers step outside
its networks (SAC's learned temperature, :func:`loose_parameters`) are registered as
``policy_parameters.<tag>.<i>``: Lightning then saves them and, under DDP, averages their gradients too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError
from warp_drive.training.engine import Engine

#: The key of a network registered under a ``ModuleDict`` whose weight-file role is ``""``.
DEFAULT_ROLE = "model"


def policy_networks(policy: Any) -> nn.Module:
    """The module registered as ``policy_models.<tag>``: the policy's one weight-file network, or a
    ``ModuleDict`` of its networks by role.

    Raises:
        ConfigError: the policy has no network, or a role that cannot name a submodule.
    """
    files = dict(policy.weight_files())
    if not files:
        raise ConfigError(f"policy '{policy.tag}' names no network (weight_files() is empty): nothing to register")
    if list(files) == [""]:
        return files[""]
    networks = nn.ModuleDict()
    for role, module in files.items():
        name = role or DEFAULT_ROLE
        if "." in name or name in networks:
            raise ConfigError(f"policy '{policy.tag}': network role {role!r} cannot name a submodule")
        networks[name] = module
    return networks


def loose_parameters(policy: Any, networks: nn.Module) -> list[nn.Parameter]:
    """The parameters ``policy``'s optimizers step that ``networks`` (:func:`policy_networks`) do not
    hold, in optimizer and parameter-group order."""
    held = {id(q) for q in networks.parameters()}
    out: list[nn.Parameter] = []
    for optimizer in policy.optimizers().values():
        for group in optimizer.param_groups:
            for q in group["params"]:
                if id(q) not in held and isinstance(q, nn.Parameter):
                    held.add(id(q))
                    out.append(q)
    return out


def optimizer_keys(engine: Engine, trained: Sequence[str]) -> list[tuple[str, str]]:
    """``(tag, name)`` of every optimizer of the ``trained`` policies: policy order, then the
    order of each policy's ``optimizers()`` (the order of ``configure_optimizers`` and of a
    checkpoint's ``optimizer_states``). A policy without one (``optimizers()`` empty, the contract's default:
    an update that trains no network) adds none.
    """
    return [(tag, name) for tag in trained for name in engine.policies[tag].optimizers()]


def engine_optimizers(engine: Engine, keys: Sequence[tuple[str, str]]) -> list[torch.optim.Optimizer]:
    """The policies' own optimizers of ``keys``, in that order."""
    return [engine.policies[tag].optimizers()[name] for tag, name in keys]


def optimizers_by_policy(keys: Sequence[tuple[str, str]], optimizers: Any) -> dict[str, dict[str, Any]]:
    """``{tag: {name: optimizer}}`` (for ``Engine.update_policies``) from one optimizer per key
    (Lightning's ``self.optimizers()``: a list, or the optimizer itself when there is one).

    Raises:
        ConfigError: not one optimizer per key.
    """
    given = list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]
    if len(given) != len(keys):
        raise ConfigError(f"Lightning holds {len(given)} optimizers for the {len(keys)} of the trained policies "
                          f"({', '.join(f'{t}/{n}' for t, n in keys)})")
    out: dict[str, dict[str, Any]] = {}
    for (tag, name), optimizer in zip(keys, given):
        out.setdefault(tag, {})[name] = optimizer
    return out


def load_optimizer_states(engine: Engine, keys: Sequence[tuple[str, str]], states: Sequence[Mapping[str, Any]]) -> None:
    """Load a checkpoint's ``optimizer_states`` (in the order of ``keys``) into the policies' optimizers.

    Raises:
        ConfigError: not one state per optimizer.
    """
    if len(states) != len(keys):
        raise ConfigError(f"checkpoint has {len(states)} optimizer states for the {len(keys)} optimizers of the "
                          f"trained policies ({', '.join(f'{t}/{n}' for t, n in keys)})")
    for optimizer, state in zip(engine_optimizers(engine, keys), states):
        optimizer.load_state_dict(state)


def optimizer_state_to(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Moves an optimizer's state tensors to ``device`` (Adam's ``step`` stays where it is)."""
    for state in optimizer.state.values():
        for key, value in state.items():
            if key != "step" and isinstance(value, torch.Tensor):
                state[key] = value.to(device)
