"""The observation normalizer of a model (``normalize_obs``) and its running-moments base."""

from __future__ import annotations

import torch
from torch import nn

Tensor = torch.Tensor


class RunningMoments(nn.Module):
    """float64 buffers ``mean`` and ``var`` of shape ``shape`` and a ``count``, merged batch-wise
    (Chan et al.); they start at mean 0, variance 1. The base of :class:`ObsNormalizer` and of the
    return normalizer (:class:`~warp_drive.training.algorithms.normalization.ValueNormalizer`)."""

    mean: Tensor
    var: Tensor
    count: Tensor

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.full((), 1e-4, dtype=torch.float64))

    def _merge(self, batch_count: float | Tensor, batch_mean: Tensor, batch_var: Tensor) -> None:
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * batch_count + delta.pow(2) * self.count * batch_count / total
        self.mean.add_(delta * batch_count / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)



class ObsNormalizer(RunningMoments):
    """Running per-feature mean/variance of observations, applied as ``clip((x - mean) / std, -c, c)``.

    A model built with ``normalize_obs`` (:class:`~warp_drive.training.models.FullyConnected`)
    applies it to its flattened input. The statistics start at mean 0, variance 1 (the identity
    up to the clip) and move only when :meth:`update` is called: the policy update calls it once
    per iteration, after its gradient steps, with the batch's observations, so the rollout and the
    update of one iteration see the same normalization (PPO's stored log-probabilities stay valid).
    The update writes the buffers in place, so a captured CUDA graph reads the current statistics.

    Args:
        size: Number of features.
        clip: Normalized values are clipped to ``[-clip, clip]``.
        eps: Added to the variance before the square root.

    Shapes:
        forward: (*lead, size) -> (*lead, size), in the input's dtype.
    """

    def __init__(self, size: int, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__((int(size),))
        self.clip = float(clip)
        self.eps = float(eps)

    def forward(self, x: Tensor) -> Tensor:
        mean = self.mean.to(x.dtype)
        std = torch.sqrt(self.var + self.eps).to(x.dtype)
        return ((x - mean) / std).clamp(-self.clip, self.clip)

    @torch.no_grad()
    def update(self, x: Tensor, weights: Tensor | None = None) -> None:
        """Merges the per-feature statistics of ``x`` (all leading dims pooled) into the running ones; with
        ``weights`` (``x``'s leading shape, bool or 0/1) only the rows where they are set count (no host sync)."""
        x = x.detach().reshape(-1, self.mean.shape[0]).to(device=self.mean.device, dtype=torch.float64)
        if weights is None:
            self._merge(float(x.shape[0]), x.mean(0), x.var(0, unbiased=False))
            return
        w = weights.detach().reshape(-1, 1).to(device=x.device, dtype=torch.float64)
        count = w.sum()
        mean = (x * w).sum(0) / count.clamp_min(1.0)
        self._merge(count, mean, ((x - mean).pow(2) * w).sum(0) / count.clamp_min(1.0))
