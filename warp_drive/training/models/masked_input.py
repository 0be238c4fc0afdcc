"""A network input that carries the agents' masks: what a model of a policy with action masks or inactive
agents receives (:mod:`warp_drive.training.agent_masks` composes it).

A policy whose env declares ``action_mask`` or ``active`` arrays (:class:`~warp_drive.vocab.constants.Constants`)
records, with what its networks see, each agent's mask of legal actions and its active flag at that step. The
input is then one flat mapping: the input's own entries (a tensor input under the key :data:`INPUT`; a mapping's
keys as they are, e.g. ``{"actor", "critic"}`` or a Dict observation's keys) plus

* :data:`ACTION_MASK`: ``(*lead, L)`` bool, True where an action is legal (L: the sum of the categorical head
  sizes, heads concatenated in order);
* :data:`ACTIVE`: ``(*lead,)`` bool, True where the agent is in the game.

(:data:`INPUT` and :data:`ACTIVE` are spelled so that no Dict observation key is likely to meet them; a Dict
observation's own ``action_mask`` key means what :data:`ACTION_MASK` means.)

It is one flat mapping, so the rollout record, its minibatches and its env chunks treat it as they treat
Dict observations. A model takes it when its class sets ``takes_agent_masks = True``; it reads it with
:func:`split_masks` and masks its categorical logits before the softmax (:func:`mask_logits`). The losses
read the active flags (:func:`active_of`); a model ignores them (or keeps inactive agents out of its running
statistics, as :class:`~warp_drive.training.models.FullyConnected`'s observation normalizer does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from warp_drive.vocab.constants import Constants

Tensor = torch.Tensor

#: the key of the legal-action mask (the name of the env's array and of a Dict observation's mask key)
ACTION_MASK = Constants.ACTION_MASK
#: the key of the active flags (the env's array is ``Constants.ACTIVE``)
ACTIVE = "_active_"
#: the key of a tensor input in a masked input
INPUT = "_input_"
MASK_KEYS = (ACTION_MASK, ACTIVE)


def with_masks(inputs: Any, action_mask: Tensor | None, active: Tensor | None) -> Any:
    """``inputs`` (a tensor or a flat mapping of tensors) with the masks added (module docstring); ``inputs``
    itself when both masks are None."""
    if action_mask is None and active is None:
        return inputs
    out = dict(inputs) if isinstance(inputs, Mapping) else {INPUT: inputs}
    if action_mask is not None:
        out[ACTION_MASK] = action_mask
    if active is not None:
        out[ACTIVE] = active
    return out


def split_masks(obs: Any) -> tuple[Any, Tensor | None, Tensor | None]:
    """``(input, action mask, active flags)`` of a model input: the input without the masks (the tensor under
    :data:`INPUT` when that is all that is left), each mask None when absent. Any other input comes back as it
    is, with two Nones (a Dict observation's own ``action_mask`` key included: it is the same mask)."""
    if not isinstance(obs, Mapping) or not any(k in obs for k in MASK_KEYS):
        return obs, None, None
    rest = {k: v for k, v in obs.items() if k not in MASK_KEYS}
    if set(rest) == {INPUT}:
        rest = rest[INPUT]
    return rest, obs.get(ACTION_MASK), obs.get(ACTIVE)


def active_of(obs: Any) -> Tensor | None:
    """The active flags ``(*lead,)`` of a masked input, or None (every sample counts)."""
    return obs.get(ACTIVE) if isinstance(obs, Mapping) else None


def mask_logits(logits: Sequence[Tensor], mask: Tensor, head_sizes: Sequence[int]) -> list[Tensor]:
    """Per categorical head, its logits with the illegal actions' (``mask`` 0 / False) set to the dtype's
    minimum: after the softmax their probabilities are exactly 0, so the samplers never draw them, argmax never
    picks them, and log-probabilities and entropies are those of the masked distribution. A head whose mask
    allows nothing gets uniform probabilities (every logit the minimum).

    Shapes:
        logits: per head ``(*lead, n_h)``; mask: ``(*lead, sum n_h)``; outputs: like ``logits``.
    """
    masks = torch.split(mask, list(head_sizes), dim=-1)
    return [x.masked_fill(m == 0, torch.finfo(x.dtype).min) for x, m in zip(logits, masks)]
