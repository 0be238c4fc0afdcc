"""Carried state: the rollout hook for recurrent models (a hidden state per env and agent, kept on the device).

A recurrent model (the contract: :mod:`warp_drive.training.models`, "Recurrent models"; built in:
``model.type: gru``) is called ``model(obs, state) -> (outputs, new state)``. Its policy keeps a
:class:`CarriedState` (:attr:`Policy.carried <warp_drive.training.algorithms.base.Policy.carried>`), three
``(E, A, *S)`` tensors allocated once on the policy's device:

* ``hidden``: the state the model reads with the current observations (``h_t``);
* ``next``: the state the last forward returned (``h'_{t+1}``, after ``s_t``);
* ``initial``: the model's state at an episode's start (zeros for a GRU).

Per env step the rollout runs, in place and with fixed-shape torch ops only (no host sync, so the CUDA-graph
rollout captures it and the tensors stay its static buffers)::

    forward on s_t:   (outputs, next) = model(s_t, hidden)
    env step, resets: hidden = where(done_t, initial, next)      # CarriedState.advance

The done flags are those the rollout records anyway (:class:`~warp_drive.training.buffers.SharedBuffers`).
In the bootstrap order (``trainer.bootstrap_at_time_limit``) the forward on the final observation (its values
bootstrap truncations) reads ``next`` and leaves it; after the resets a recurrent policy runs one more forward
on the observations the next step acts on (the outputs on saved reset observations, computed once per
rollout for stateless policies, would need every env's state). When every env is force-reset (training
starts, evaluation) the state is reset too (:func:`reset_carried_states`).

The rollout record (:class:`~warp_drive.training.buffers.RolloutBuffers`) keeps what the update needs to run
the sequences again: ``start_state``, the ``hidden`` of the rollout's first step, and ``episode_starts``,
``(B, E, A)`` bool, set at the steps whose state was reset (the step after a done flag). The update
(truncated back-propagation through time over the rollout chunk) takes minibatches of whole env x agent
sequences (:func:`~warp_drive.training.utils.minibatch.sequence_layout`) and runs the model over each
sequence's time axis from its start state, resetting it at the recorded starts: before the first optimizer
step it recomputes exactly what the rollout computed. A policy whose model is not recurrent has no
:class:`CarriedState` and none of this runs (no memory, no time, the same numbers).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.models.gru import is_recurrent

logger = logging.getLogger(__name__)

Tensor = torch.Tensor


class CarriedState:
    """One policy's carried state (module docstring): ``hidden``, ``next`` and ``initial``, each ``(E, A, *S)``.

    Args:
        model: a recurrent model (its ``initial_state((E, A))`` gives the shape, dtype and device).
        num_envs, num_agents: E, and A, the policy's agents.
    """

    def __init__(self, model: torch.nn.Module, num_envs: int, num_agents: int) -> None:
        module = getattr(model, "module", model)
        self.initial = module.initial_state((num_envs, num_agents)).detach().clone()
        self.hidden = self.initial.clone()
        self.next = self.initial.clone()

    @property
    def shape(self) -> tuple[int, ...]:
        """``(E, A, *S)``."""
        return tuple(self.hidden.shape)

    def inputs(self, rows: slice = slice(None)) -> Tensor:
        """The state the model reads with the current observations of envs ``rows`` (a view)."""
        return self.hidden[rows]

    def set_next(self, state: Tensor, rows: slice = slice(None)) -> None:
        """The state the forward on the current observations of envs ``rows`` returned."""
        self.next[rows].copy_(state)

    def advance(self, done: Tensor, rows: slice = slice(None)) -> None:
        """After an env step and its resets: ``hidden = where(done, initial, next)`` for envs ``rows``
        (``done``: their (E,) flags, bool or int)."""
        mask = (done if done.dtype == torch.bool else done > 0).view(-1, *([1] * (self.hidden.dim() - 1)))
        self.hidden[rows].copy_(torch.where(mask, self.initial[rows], self.next[rows]))

    def reset(self) -> None:
        """Every env starts an episode (a force reset of every env)."""
        self.hidden.copy_(self.initial)
        self.next.copy_(self.initial)

    def state_dict(self) -> dict[str, Tensor]:
        """This rank's states (what a resumed run continues from)."""
        return {"hidden": self.hidden.clone(), "next": self.next.clone()}

    def load_state_dict(self, state: Mapping[str, Tensor]) -> None:
        self.hidden.copy_(state["hidden"])
        self.next.copy_(state["next"])


def build_carried_state(model: torch.nn.Module, ctx: Any) -> CarriedState | None:
    """The :class:`CarriedState` of a policy built from ``ctx`` (a
    :class:`~warp_drive.training.algorithms.base.BuildContext`) whose model is recurrent, else None; checks the
    run settings a recurrent policy cannot take.

    Raises:
        ConfigError: ``trainer.compile`` (naming it and the fix), or ``num_minibatches`` that does not divide the
            policy's env x agent sequences.
    """
    if not is_recurrent(model):
        return None
    where, tc = f"policy.{ctx.tag}", ctx.run_config.trainer
    if getattr(tc, "compile", False):
        raise ConfigError(f"`trainer.compile`=true compiles the update's loss for MLP minibatches; {where}.model.type="
                          f"{ctx.config.model.type} is recurrent (its update runs the model over each sequence's time "
                          "axis): set `trainer.compile: false`, or use an MLP model (fully_connected).")
    sequences = ctx.num_envs * len(ctx.agent_ids)
    minibatches = ctx.config.num_minibatches
    if sequences % minibatches:
        raise ConfigError(f"`{where}.num_minibatches`={minibatches} must divide the policy's {sequences} sequences "
                          f"({ctx.num_envs} envs x {len(ctx.agent_ids)} agents): a recurrent policy's minibatches "
                          "hold whole env x agent sequences. Use a divisor of it, e.g. 1.")
    return CarriedState(model, ctx.num_envs, len(ctx.agent_ids))


def reset_carried_states(policies: Iterable[Any]) -> None:
    """Every policy's carried state back to the initial one (every env was force-reset)."""
    for p in policies:
        if getattr(p, "carried", None) is not None:
            p.carried.reset()


def carried_state_entry(policies: Iterable[Any]) -> dict[str, dict[str, dict[str, Tensor]]]:
    """The engine's rank-state entry ``{"carried_state": {tag: state}}`` of the policies that carry a state;
    empty without recurrent policies (a stateless run's checkpoint is unchanged)."""
    states = {p.tag: p.carried.state_dict() for p in policies if getattr(p, "carried", None) is not None}
    return {"carried_state": states} if states else {}


def load_carried_states(policies: Mapping[str, Any], states: Mapping[str, Mapping[str, Tensor]] | None) -> None:
    """Restores the ``{tag: state}`` of :func:`carried_state_entry`; a recurrent policy missing from it starts from
    the initial state."""
    for tag, p in policies.items():
        if getattr(p, "carried", None) is None:
            continue
        state = (states or {}).get(tag)
        p.carried.load_state_dict(state) if state is not None else p.carried.reset()


def episode_starts(terminated: Tensor, truncated: Tensor, out: Tensor) -> None:
    """The steps whose state was reset, into ``out`` ``(B, E, A)`` bool: the step after a done flag (an
    episode that ended, by termination or truncation, at the previous step); never the first step, whose
    state is the recorded start state. ``terminated``, ``truncated``: (B, E) bool."""
    out[0].fill_(False)
    out[1:].copy_((terminated[:-1] | truncated[:-1]).unsqueeze(-1).expand_as(out[1:]))
