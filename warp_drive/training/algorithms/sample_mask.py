"""Means over the samples that count: the losses' and metrics' reductions when some agents have left the game.

A *sample mask* is a bool (or 0/1) tensor of a batch's per-agent shape, e.g. ``(B, E, A)`` or a minibatch's
``(M, A)``: True where the agent was in the game when it acted (the env's ``active`` array,
:mod:`warp_drive.training.agent_masks`). Every loss term, the advantage standardization and every metric of
A2C/PPO is then a masked mean ``sum(mask * term) / max(sum(mask), 1)``: inactive samples are left out, not
counted as zeros that dilute the mean. With no mask (None) each function is the plain reduction it replaces,
bit for bit. All of them run on the device without a host sync (a CUDA graph captures them).
"""

from __future__ import annotations

import torch

Tensor = torch.Tensor


def masked_sum(x: Tensor, mask: Tensor) -> Tensor:
    """``sum(x where mask)``: 0-d; entries outside the mask do not count even when they are not finite."""
    return torch.where(mask.bool(), x, torch.zeros((), dtype=x.dtype, device=x.device)).sum()


def mask_count(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """The number of samples in the mask, at least 1 (the divisor of a masked mean), 0-d ``dtype``."""
    return mask.to(dtype).sum().clamp_min(1.0)


def masked_mean(x: Tensor, mask: Tensor | None) -> Tensor:
    """``x.mean()`` over the samples where ``mask`` is set (0 when none is); ``x.mean()`` without a mask.

    Shapes:
        x, mask: the same (or ``mask`` broadcastable to ``x``); output: ().
    """
    if mask is None:
        return x.mean()
    mask = mask.expand_as(x)
    return masked_sum(x, mask) / mask_count(mask, x.dtype)


def masked_moments(x: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """Mean and population std of the samples of ``x`` where ``mask`` is set (std 0 for one sample, both 0
    for none), as 0-d tensors; without a mask those of every element (:func:`.normalization.moments`)."""
    if mask is None:
        mean = x.mean()
        std = x.std(unbiased=False) if x.numel() > 1 else torch.zeros_like(mean)
        return mean, std
    mean = masked_mean(x, mask)
    return mean, masked_mean((x - mean).pow(2), mask).sqrt()


def masked_explained_variance(predictions: Tensor, targets: Tensor, mask: Tensor | None) -> Tensor:
    """``max(-1, 1 - Var(targets - predictions) / Var(targets))`` over the masked samples, 0-d, detached."""
    predictions, targets = predictions.detach(), targets.detach()
    if mask is None:
        var_t = targets.var(unbiased=False)
        ev = 1.0 - (targets - predictions).var(unbiased=False) / (var_t + 1e-10)
        return ev.clamp_min(-1.0)
    _, std_t = masked_moments(targets, mask)
    _, std_e = masked_moments(targets - predictions, mask)
    return (1.0 - std_e.pow(2) / (std_t.pow(2) + 1e-10)).clamp_min(-1.0)


def chunk_weight(mask: Tensor | None, start: int, stop: int, rows: int) -> float | Tensor:
    """The weight of rows ``start:stop`` of a minibatch of ``rows`` rows in its mean: their share of the
    samples (``(stop - start) / rows``), or, with a sample mask ``(rows, ...)``, their share of the masked
    samples (a 0-d tensor; 0 for a chunk without any)."""
    if mask is None:
        return (stop - start) / rows
    return mask[start:stop].to(torch.float32).sum() / mask_count(mask)
