"""Log-probabilities and entropies of model head outputs.

A model's ``forward`` returns a list of head outputs (the contract in :mod:`warp_drive.training.models`): a
probability tensor ``(..., n_h)`` per categorical head, or a ``(mean, std)`` tuple of ``(..., d)`` tensors.

Actions are stored as one tensor ``(..., n_columns)``: one integer column per categorical head,
then ``d`` float columns per Gaussian head, in head order. The joint log-probability is the sum of
the heads' (independent) log-probabilities and the entropy the sum of their entropies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from warp_drive.errors import DataShapeError

Tensor = torch.Tensor
HeadOutput = Tensor | tuple[Tensor, Tensor]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def head_width(head: HeadOutput) -> int:
    """Number of action columns a head uses (1 for categorical, d for Gaussian)."""
    if isinstance(head, (tuple, list)):
        return head[0].shape[-1]
    return 1


def categorical_log_prob_entropy(probs: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
    """Log pi(a) and entropy of one categorical head given as probabilities.

    Probabilities of exactly 0 (masked actions) contribute 0 to the entropy, not NaN.

    Shapes:
        probs: (..., n); actions: (...) integer; outputs: (...).
    """
    tiny = torch.finfo(probs.dtype).tiny
    log_p = torch.log(probs.clamp_min(tiny))
    log_prob = log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    entropy = -(probs * log_p).sum(-1)
    return log_prob, entropy


def gaussian_log_prob_entropy(mean: Tensor, std: Tensor, actions: Tensor) -> tuple[Tensor, Tensor]:
    """Log-density and entropy of a diagonal Gaussian, summed over its d dimensions.

    Shapes:
        mean, std, actions: (..., d); outputs: (...).
    """
    std = std.expand_as(mean)
    log_std = torch.log(std)
    z = (actions.to(mean.dtype) - mean) / std
    log_prob = (-0.5 * z.pow(2) - log_std - _HALF_LOG_2PI).sum(-1)
    entropy = (0.5 + _HALF_LOG_2PI + log_std).sum(-1)
    return log_prob, entropy


def log_prob_and_entropy(
    head_outputs: Sequence[HeadOutput], actions: Tensor
) -> tuple[Tensor, Tensor]:
    """Joint log-probability of ``actions`` and joint entropy over all heads.

    Args:
        head_outputs: The model's list of head outputs.
        actions: Action columns in head order (categorical columns may be float-typed ints).

    Returns:
        ``(log_prob, entropy)``, each of shape ``actions.shape[:-1]``.

    Shapes:
        actions: (..., n_columns) with n_columns = sum of head widths; outputs: (...).
    """
    if not head_outputs:
        raise DataShapeError("`head_outputs` is empty; a policy needs at least one action head.")
    expected = sum(head_width(h) for h in head_outputs)
    if actions.shape[-1] != expected:
        raise DataShapeError(
            f"`actions` has {actions.shape[-1]} columns (shape {tuple(actions.shape)}); expected "
            f"{expected} (one per categorical head, d per Gaussian head)."
        )
    log_prob: Tensor | int = 0
    entropy: Tensor | int = 0
    col = 0
    for head in head_outputs:
        if isinstance(head, (tuple, list)):
            lp, ent = gaussian_log_prob_entropy(*head, actions[..., col : col + head_width(head)])
        else:
            lp, ent = categorical_log_prob_entropy(head, actions[..., col])
        col += head_width(head)
        log_prob = log_prob + lp
        entropy = entropy + ent
    return log_prob, entropy  # type: ignore[return-value]
