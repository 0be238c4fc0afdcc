"""Advantage standardization and running return normalization (no host syncs)."""

from __future__ import annotations

import torch
from torch import nn

Tensor = torch.Tensor


def moments(x: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and population std over all elements of ``x`` (std 0 for a single element), as 0-d tensors."""
    mean = x.mean()
    std = x.std(unbiased=False) if x.numel() > 1 else torch.zeros_like(mean)
    return mean, std


def standardize(x: Tensor, eps: float = 1e-8, stats: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """``(x - mean) / (std + eps)``: by default the mean and population std of ``x`` itself.

    Args:
        x: values to standardize.
        eps: added to the std.
        stats: ``(mean, std)`` to use instead, e.g. :func:`moments` of the whole batch that ``x``
            is a chunk of (so a batch processed in chunks is standardized as one).

    Shapes:
        x: any; output: like x.
    """
    mean, std = moments(x) if stats is None else stats
    return (x - mean) / (std + eps)


class ValueNormalizer(nn.Module):
    """Running mean/variance of the returns, for a value head that predicts normalized returns.

    With ``normalize_return`` the value head learns ``(G - mean) / std`` where mean and std are
    running statistics over every return seen so far (merged batch-wise, Chan et al.). Values
    read from the model are mapped back with :meth:`denormalize` before computing advantages,
    so GAE works in reward units while the value loss works in normalized units. (The reference
    standardized each batch's returns per time step instead, which leaves the value head chasing
    a different scale every batch.)

    The statistics are float64 buffers (saved in ``state_dict``) on the module's device.

    Args:
        eps: Added to the variance before the square root.
    """

    mean: Tensor
    var: Tensor
    count: Tensor

    def __init__(self, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("var", torch.ones((), dtype=torch.float64))
        self.register_buffer("count", torch.full((), 1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merges the statistics of all elements of ``x`` into the running ones."""
        x = x.detach().to(device=self.mean.device, dtype=torch.float64)
        batch_count = float(x.numel())
        batch_mean = x.mean()
        batch_var = x.var(unbiased=False) if x.numel() > 1 else torch.zeros_like(batch_mean)
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = (
            self.var * self.count
            + batch_var * batch_count
            + delta.pow(2) * self.count * batch_count / total
        )
        self.mean.add_(delta * batch_count / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def normalize(self, x: Tensor) -> Tensor:
        """Maps returns to normalized units (same dtype as ``x``)."""
        std = torch.sqrt(self.var + self.eps)
        return ((x - self.mean) / std).to(x.dtype)

    def denormalize(self, y: Tensor) -> Tensor:
        """Maps normalized values back to reward units (same dtype as ``y``)."""
        std = torch.sqrt(self.var + self.eps)
        return (y * std + self.mean).to(y.dtype)


class ObsNormalizer(nn.Module):
    """Running per-feature mean/variance of observations, applied as ``clip((x - mean) / std, -c, c)``.

    A model built with ``normalize_obs`` (:class:`~warp_drive.training.models.FullyConnected`)
    applies it to its flattened input. The statistics start at mean 0, variance 1 (the identity
    up to the clip) and move only when :meth:`update` is called: the policy update calls it once
    per iteration, after its gradient steps, with the batch's observations, so the rollout and the
    update of one iteration see the same normalization (PPO's stored log-probabilities stay valid).
    The update writes the buffers in place, so a captured CUDA graph reads the current statistics.

    The statistics are float64 buffers (saved in ``state_dict``).

    Args:
        size: Number of features.
        clip: Normalized values are clipped to ``[-clip, clip]``.
        eps: Added to the variance before the square root.

    Shapes:
        forward: (*lead, size) -> (*lead, size), in the input's dtype.
    """

    mean: Tensor
    var: Tensor
    count: Tensor

    def __init__(self, size: int, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.clip = float(clip)
        self.eps = float(eps)
        self.register_buffer("mean", torch.zeros(int(size), dtype=torch.float64))
        self.register_buffer("var", torch.ones(int(size), dtype=torch.float64))
        self.register_buffer("count", torch.full((), 1e-4, dtype=torch.float64))

    def forward(self, x: Tensor) -> Tensor:
        mean = self.mean.to(x.dtype)
        std = torch.sqrt(self.var + self.eps).to(x.dtype)
        return ((x - mean) / std).clamp(-self.clip, self.clip)

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Merges the per-feature statistics of ``x`` (all leading dims pooled) into the running ones."""
        x = x.detach().reshape(-1, self.mean.shape[0]).to(device=self.mean.device, dtype=torch.float64)
        batch_count = float(x.shape[0])
        batch_mean = x.mean(0)
        batch_var = x.var(0, unbiased=False)
        total = self.count + batch_count
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * batch_count + delta.pow(2) * self.count * batch_count / total
        self.mean.add_(delta * batch_count / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)
