"""Advantage standardization, running return and reward normalization (no host syncs).

The observation normalizer is part of a model: :class:`~warp_drive.training.models.obs_normalizer.ObsNormalizer`
(re-exported here), on the same running-moments base as :class:`ValueNormalizer`.
"""

from __future__ import annotations

import torch
from torch import nn

from warp_drive.training.algorithms.actor_critic.returns import flags_like
from warp_drive.training.algorithms.sample_mask import masked_moments
from warp_drive.training.models.obs_normalizer import ObsNormalizer, RunningMoments

Tensor = torch.Tensor


def moments(x: Tensor, sample_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Mean and population std over all elements of ``x`` (std 0 for a single element), as 0-d tensors; with
    ``sample_mask``, over the elements where it is set (:func:`~.sample_mask.masked_moments`)."""
    return masked_moments(x, sample_mask)


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


class ValueNormalizer(RunningMoments):
    """Running mean/variance of the returns, for a value head that predicts normalized returns.

    With ``normalize_return`` the value head learns ``(G - mean) / std`` where mean and std are
    running statistics over every return seen so far (merged batch-wise, Chan et al.). Values
    read from the model are mapped back with :meth:`denormalize` before computing advantages,
    so GAE works in reward units while the value loss works in normalized units.

    Args:
        eps: Added to the variance before the square root.
    """

    def __init__(self, eps: float = 1e-8) -> None:
        super().__init__(())
        self.eps = eps

    @torch.no_grad()
    def update(self, x: Tensor, sample_mask: Tensor | None = None) -> None:
        """Merges the statistics of all elements of ``x`` into the running ones; with ``sample_mask`` (like
        ``x``), of the elements where it is set only (no host sync)."""
        x = x.detach().to(device=self.mean.device, dtype=torch.float64)
        if sample_mask is not None:
            mask = sample_mask.to(device=x.device).expand_as(x)
            mean, std = masked_moments(x, mask)
            self._merge(mask.to(torch.float64).sum(), mean, std.pow(2))
            return
        mean = x.mean()
        self._merge(float(x.numel()), mean, x.var(unbiased=False) if x.numel() > 1 else torch.zeros_like(mean))

    def normalize(self, x: Tensor) -> Tensor:
        """Maps returns to normalized units (same dtype as ``x``)."""
        std = torch.sqrt(self.var + self.eps)
        return ((x - self.mean) / std).to(x.dtype)

    def denormalize(self, y: Tensor) -> Tensor:
        """Maps normalized values back to reward units (same dtype as ``y``)."""
        std = torch.sqrt(self.var + self.eps)
        return (y * std + self.mean).to(y.dtype)


class RewardNormalizer(nn.Module):
    """Rewards divided by the running std of the discounted return, then clipped (VecNormalize-style).

    Each env (and agent) keeps a running discounted return ``R <- gamma * R + r``, reset to 0 after
    the step that ends its episode (terminated or truncated). Every ``R`` of a rollout is merged into
    running statistics (a :class:`ValueNormalizer`'s), and the rollout's rewards become
    ``clip(r / sqrt(var + eps), -clip, clip)``: scaled, not centred, as stable-baselines3's
    ``VecNormalize(norm_reward=True)``. VecNormalize merges each step's returns before scaling
    that step's rewards; here the whole rollout's returns are merged first and then its rewards
    are scaled (the same statistics after every rollout).

    The advantages, returns and value head then live in scaled units; episode returns the trainer
    reports are the env's own rewards. The variance (``return_stats``: float64 buffers) is saved in
    ``state_dict``; the running returns are not (episodes start afresh after a resume), and are
    allocated on the first call, on the rewards' device, then updated in place (no host sync, so a
    captured CUDA graph of the rollout replays it).

    Args:
        gamma: Discount of the running return (the algorithm's).
        clip: Scaled rewards are clipped to ``[-clip, clip]``.
        eps: Added to the variance before the square root.

    Shapes:
        rewards: (B, E, *agent_dims); terminated, truncated: (B, E) or like rewards;
        output: like rewards.
    """

    def __init__(self, gamma: float, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.gamma = float(gamma)
        self.clip = float(clip)
        self.eps = float(eps)
        self.return_stats = ValueNormalizer(eps)
        self.returns: Tensor | None = None

    @torch.no_grad()
    def forward(self, rewards: Tensor, terminated: Tensor, truncated: Tensor | None = None,
                sample_mask: Tensor | None = None) -> Tensor:
        """Updates the running returns and their variance with the rollout, and returns its scaled rewards;
        ``sample_mask`` (like ``rewards``): only those samples' running returns enter the variance."""
        ended = flags_like(terminated, rewards, "terminated")
        if truncated is not None:
            ended = ended | flags_like(truncated, rewards, "truncated")
        keep = (~ended).to(rewards.dtype).expand_as(rewards)
        if self.returns is None or self.returns.shape != rewards.shape[1:] or self.returns.device != rewards.device:
            self.returns = torch.zeros(rewards.shape[1:], dtype=rewards.dtype, device=rewards.device)
        running = torch.empty_like(rewards)
        ret = self.returns
        for t in range(rewards.shape[0]):
            torch.add(rewards[t], ret, alpha=self.gamma, out=running[t])
            ret = running[t] * keep[t]
        self.returns.copy_(ret)
        self.return_stats.update(running, sample_mask)
        std = torch.sqrt(self.return_stats.var + self.eps).to(rewards.dtype)
        return (rewards / std).clamp(-self.clip, self.clip)

__all__ = ["ObsNormalizer", "RewardNormalizer", "RunningMoments", "ValueNormalizer", "moments", "standardize"]
