"""Proximal policy optimization (clipped surrogate) with stored old log-probabilities.

The old log-probabilities are those of the policy that sampled the actions, stored at rollout time
(``log_prob_and_entropy(head_outputs, actions)`` under ``torch.no_grad``), and the batch is reused for
``num_epochs`` x ``num_minibatches`` gradient steps, so the ratio moves away from 1 after the first step.
"""

from __future__ import annotations

from typing import Any

import torch

from warp_drive.errors import ConfigError, UsageError
from warp_drive.training.algorithms.actor_critic.a2c import A2C, Metrics, combine_losses, loss_advantages, value_loss
from warp_drive.training.algorithms.sample_mask import masked_mean

Tensor = torch.Tensor


def ppo_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    entropy: Tensor,
    values: Tensor,
    advantages: Tensor,
    value_targets: Tensor,
    *,
    clip_param: float,
    vf_loss_coeff: float | Tensor,
    entropy_coeff: float | Tensor,
    normalize_advantage: bool = False,
    old_values: Tensor | None = None,
    vf_clip_param: float | None = None,
    advantage_stats: tuple[Tensor, Tensor] | None = None,
    sample_mask: Tensor | None = None,
) -> tuple[Tensor, Metrics]:
    """PPO-clip loss.

    ``ratio = exp(log_prob - old_log_prob)``; policy loss
    ``-mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))``; value loss MSE (clipped around
    ``old_values`` when ``vf_clip_param`` is set); loss = policy + c_vf * value - c_ent * entropy.

    Args:
        old_log_prob: Joint log pi_old(a|s) stored at sampling time (constant).
        clip_param: Ratio clip epsilon.
        old_values: Rollout-time value outputs, needed for value clipping.
        vf_clip_param: Value clip range, or None for no value clipping (default).
        sample_mask: True where the sample counts: every term and metric is a mean over those samples only.
        others: as for :func:`~warp_drive.training.algorithms.actor_critic.a2c.a2c_loss`.

    Returns:
        ``(loss, metrics)``; metrics: :func:`~warp_drive.training.algorithms.actor_critic.a2c.a2c_loss`'s, plus
        approx_kl (``mean((r - 1) - log r)``), clip_fraction (share of ``|r - 1| > eps``),
        mean_ratio.

    Shapes:
        all tensor inputs: (N...) identical; loss: ().
    """
    mask = sample_mask
    adv = loss_advantages(advantages, normalize_advantage, advantage_stats, mask)
    log_ratio = log_prob - old_log_prob.detach()
    ratio = torch.exp(log_ratio)
    surrogate = torch.minimum(ratio * adv, ratio.clamp(1.0 - clip_param, 1.0 + clip_param) * adv)
    old_v = None if old_values is None else old_values.detach()
    vf_loss = value_loss(values, value_targets.detach(), old_v, vf_clip_param, mask)
    loss, metrics = combine_losses(-masked_mean(surrogate, mask), vf_loss, entropy, advantages, vf_loss_coeff,
                                   entropy_coeff, mask)
    with torch.no_grad():
        metrics["approx_kl"] = masked_mean((ratio - 1.0) - log_ratio, mask)
        metrics["clip_fraction"] = masked_mean(((ratio - 1.0).abs() > clip_param).to(ratio.dtype), mask)
        metrics["mean_ratio"] = masked_mean(ratio, mask)
    return loss, metrics


class PPO(A2C):
    """PPO-clip on top of :class:`A2C`'s advantage computation.

    Args:
        clip_param: Ratio clip epsilon.
        vf_clip_param: Value clip range, or None (default) for unclipped value loss.
        **kwargs: :class:`A2C` arguments.
    """

    name = "PPO"
    config_names = A2C.config_names + ("clip_param", "vf_clip_param")

    def __init__(
        self,
        *,
        clip_param: float = 0.2,
        vf_clip_param: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if clip_param <= 0:
            raise ConfigError(f"clip_param={clip_param} must be > 0 (e.g. 0.2).")
        if vf_clip_param is not None and vf_clip_param <= 0:
            raise ConfigError(f"vf_clip_param={vf_clip_param} must be > 0 or None.")
        self.clip_param = float(clip_param)
        self.vf_clip_param = None if vf_clip_param is None else float(vf_clip_param)

    def _loss(self, log_prob: Tensor, old_log_probs: Tensor | None, old_values: Tensor | None, *tensors: Tensor,
              **terms: Any) -> tuple[Tensor, Metrics]:
        """Clipped surrogate with the rollout's stored log-probabilities (``old_log_probs``)."""
        if old_log_probs is None:
            raise UsageError(
                "PPO.compute_loss needs `old_log_probs`: the joint log-probabilities of the "
                "actions under the policy that sampled them, stored at rollout time."
            )
        return ppo_loss(log_prob, old_log_probs, *tensors, clip_param=self.clip_param, old_values=old_values,
                        vf_clip_param=self.vf_clip_param, **terms)

