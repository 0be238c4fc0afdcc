"""Advantage actor-critic (A2C): loss function and the algorithm object the trainer drives.

The trainer-facing flow is the same for :class:`A2C` and :class:`~.ppo.PPO`::

    algo = PPO.from_config(policy_config).to(device)   # the class the registry entry's ActorCritic builder holds
    # after a rollout (values straight from the model, detached):
    advantages, returns = algo.compute_advantages(rewards, values, last_values, terminated,
                                                  truncated, final_values)
    old_log_probs = ...           # stored at sampling time (PPO needs them; A2C ignores them)
    for epoch, minibatch:          # A2C: 1 epoch x num_minibatches
        head_outputs, values = model(obs_mb)
        loss, metrics = algo.compute_loss(head_outputs, values, actions_mb, advantages_mb,
                                          returns_mb, timestep=t, old_log_probs=old_lp_mb,
                                          old_values=old_values_mb)

All metrics are 0-d tensors on the loss's device (no ``.item()``); the caller decides when to
copy them to the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from warp_drive.errors import UsageError
from warp_drive.training.models.distributions import HeadOutput, log_prob_and_entropy
from warp_drive.training.algorithms.normalization import RewardNormalizer, ValueNormalizer, standardize
from warp_drive.training.algorithms.sample_mask import masked_explained_variance, masked_mean, masked_moments
from warp_drive.training.algorithms.actor_critic.returns import compute_gae
from warp_drive.training.utils.param_scheduler import ParamScheduler, ScheduleLike

Tensor = torch.Tensor
Metrics = dict[str, Tensor]


def explained_variance(predictions: Tensor, targets: Tensor, sample_mask: Tensor | None = None) -> Tensor:
    """``max(-1, 1 - Var(targets - predictions) / Var(targets))`` as a 0-d tensor (detached), over the samples
    of ``sample_mask`` when given (:mod:`~warp_drive.training.algorithms.sample_mask`)."""
    return masked_explained_variance(predictions, targets, sample_mask)


def value_loss(
    values: Tensor,
    value_targets: Tensor,
    old_values: Tensor | None = None,
    vf_clip_param: float | None = None,
    sample_mask: Tensor | None = None,
) -> Tensor:
    """Mean squared error of the value head, optionally PPO-clipped around ``old_values``, over the samples of
    ``sample_mask`` when given.

    With clipping the loss per sample is ``max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)``.

    Shapes:
        values, value_targets, old_values, sample_mask: (N...) identical; output: ().
    """
    unclipped = (values - value_targets).pow(2)
    if vf_clip_param is None:
        return masked_mean(unclipped, sample_mask)
    if old_values is None:
        raise UsageError("value clipping (vf_clip_param) needs `old_values` from the rollout.")
    clipped = old_values + (values - old_values).clamp(-vf_clip_param, vf_clip_param)
    return masked_mean(torch.maximum(unclipped, (clipped - value_targets).pow(2)), sample_mask)


def a2c_loss(
    log_prob: Tensor,
    entropy: Tensor,
    values: Tensor,
    advantages: Tensor,
    value_targets: Tensor,
    *,
    vf_loss_coeff: float | Tensor,
    entropy_coeff: float | Tensor,
    normalize_advantage: bool = False,
    advantage_stats: tuple[Tensor, Tensor] | None = None,
    sample_mask: Tensor | None = None,
) -> tuple[Tensor, Metrics]:
    """A2C loss: ``-mean(log_prob * A) + c_vf * MSE(V, R) - c_ent * mean(entropy)``.

    Args:
        log_prob: Joint log pi(a|s) of the taken actions (with gradient).
        entropy: Joint policy entropy (with gradient).
        values: Value-head output (with gradient), in the units of ``value_targets``.
        advantages: Advantages (treated as constants).
        value_targets: Value targets (treated as constants).
        normalize_advantage: Standardize advantages over the given samples first.
        advantage_stats: ``(mean, std)`` for that standardization instead of the given samples'
            own (the whole batch's, when the batch is processed in chunks).
        sample_mask: True where the sample counts (its agent was in the game): every term and metric is then a
            mean over those samples only (:mod:`~warp_drive.training.algorithms.sample_mask`); None: all count.

    Returns:
        ``(loss, metrics)``; metrics: policy_loss, value_loss, entropy, mean_advantage.

    Shapes:
        all inputs: (N...) identical, e.g. (B, E, A) or a minibatch (M, A); loss: ().
    """
    adv = loss_advantages(advantages, normalize_advantage, advantage_stats, sample_mask)
    policy_loss = -masked_mean(log_prob * adv, sample_mask)
    return combine_losses(policy_loss, value_loss(values, value_targets.detach(), sample_mask=sample_mask), entropy,
                          advantages, vf_loss_coeff, entropy_coeff, sample_mask)


def loss_advantages(advantages: Tensor, normalize: bool, stats: tuple[Tensor, Tensor] | None,
                    sample_mask: Tensor | None = None) -> Tensor:
    """The advantages as the policy loss weighs them: constants, standardized when ``normalize`` (by ``stats``,
    else by the moments of the samples of ``sample_mask``, else of all)."""
    adv = advantages.detach()
    if not normalize:
        return adv
    return standardize(adv, stats=stats if stats is not None or sample_mask is None
                       else masked_moments(adv, sample_mask))


def combine_losses(policy_loss: Tensor, vf_loss: Tensor, entropy: Tensor, advantages: Tensor,
                   vf_loss_coeff: float | Tensor, entropy_coeff: float | Tensor,
                   sample_mask: Tensor | None = None) -> tuple[Tensor, Metrics]:
    """``policy_loss + c_vf * vf_loss - c_ent * mean(entropy)`` and the metrics A2C and PPO share:
    policy_loss, value_loss, entropy, mean_advantage (means over the samples of ``sample_mask``, if given)."""
    mean_entropy = masked_mean(entropy, sample_mask)
    loss = policy_loss + vf_loss_coeff * vf_loss - entropy_coeff * mean_entropy
    return loss, {"policy_loss": policy_loss.detach(), "value_loss": vf_loss.detach(),
                  "entropy": mean_entropy.detach(), "mean_advantage": masked_mean(advantages.detach(), sample_mask)}


class A2C:
    """A2C with bootstrapped GAE(gamma, lambda) advantages and scheduled loss coefficients.

    Args:
        gamma: Discount factor.
        gae_lambda: GAE lambda (1.0 = discounted returns minus V).
        vf_loss_coeff: Number or ``[[t, v], ...]`` schedule over env timesteps.
        entropy_coeff: Number or schedule.
        normalize_advantage: Standardize advantages per (mini)batch in the loss.
        normalize_return: Train the value head on running-normalized returns
            (see :class:`ValueNormalizer`); values from the model are then in normalized units.
        normalize_reward: Scale each rollout's rewards before the advantages (:class:`RewardNormalizer`);
            advantages, returns and values are then in those scaled units.
    """

    name = "A2C"
    #: the :class:`~warp_drive.config.PolicyConfig` fields that are constructor kwargs (:meth:`config_kwargs`)
    config_names: tuple[str, ...] = ("gamma", "gae_lambda", "vf_loss_coeff", "entropy_coeff", "normalize_advantage",
                                     "normalize_return", "normalize_reward")

    def __init__(
        self,
        *,
        gamma: float = 0.98,
        gae_lambda: float = 1.0,
        vf_loss_coeff: ScheduleLike = 0.01,
        entropy_coeff: ScheduleLike = 0.05,
        normalize_advantage: bool = False,
        normalize_return: bool = False,
        normalize_reward: bool = False,
    ) -> None:
        self.gamma = float(gamma)
        self.gae_lambda = float(gae_lambda)
        self.vf_loss_coeff = ParamScheduler(vf_loss_coeff, "vf_loss_coeff")
        self.entropy_coeff = ParamScheduler(entropy_coeff, "entropy_coeff")
        self.normalize_advantage = bool(normalize_advantage)
        self.value_normalizer: ValueNormalizer | None = ValueNormalizer() if normalize_return else None
        self.reward_normalizer: RewardNormalizer | None = RewardNormalizer(self.gamma) if normalize_reward else None

    @classmethod
    def config_kwargs(cls, policy_config: Any) -> dict[str, Any]:
        """Constructor kwargs read from a :class:`~warp_drive.config.PolicyConfig`."""
        return {name: getattr(policy_config, name) for name in cls.config_names}

    @classmethod
    def from_config(cls, policy_config: Any) -> A2C:
        """Builds the algorithm from a :class:`~warp_drive.config.PolicyConfig`."""
        return cls(**cls.config_kwargs(policy_config))

    def _normalizers(self) -> dict[str, torch.nn.Module]:
        """The return and reward normalizers this algorithm uses, by state-dict key."""
        found = {"value_normalizer": self.value_normalizer, "reward_normalizer": self.reward_normalizer}
        return {key: n for key, n in found.items() if n is not None}

    def running_statistics(self) -> list[ValueNormalizer | None]:
        """The running statistics to average over ranks: the return normalizer (None without
        ``normalize_return``), then the reward normalizer's return variance, if any."""
        rn = self.reward_normalizer
        return [self.value_normalizer] + ([] if rn is None else [rn.return_stats])

    def to(self, device: torch.device | str) -> A2C:
        """Moves the return/reward-normalizer statistics (if any) to ``device``; returns self."""
        for normalizer in self._normalizers().values():
            normalizer.to(device)
        return self

    def state_dict(self) -> dict[str, Any]:
        """State to checkpoint (the running return and reward-scale statistics, if any)."""
        return {key: n.state_dict() for key, n in self._normalizers().items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key, normalizer in self._normalizers().items():
            if key in state:
                normalizer.load_state_dict(state[key])

    def values_in_reward_units(self, values: Tensor) -> Tensor:
        """Maps value-head outputs to reward units (identity without return normalization)."""
        vn = self.value_normalizer
        return values if vn is None else vn.denormalize(values)

    def value_targets(self, returns: Tensor) -> Tensor:
        """Maps returns (reward units) to value-head units."""
        vn = self.value_normalizer
        return returns if vn is None else vn.normalize(returns)

    @torch.no_grad()
    def compute_advantages(
        self,
        rewards: Tensor,
        values: Tensor,
        last_values: Tensor,
        terminated: Tensor,
        truncated: Tensor | None = None,
        final_values: Tensor | None = None,
        sample_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """GAE advantages and returns for a rollout, in reward units.

        ``values``, ``last_values`` and ``final_values`` are raw value-head outputs; with return
        normalization they are denormalized here, and the running statistics are then updated
        with the new returns. With reward normalization the rewards are scaled first (and the
        running reward scale updated). Call once per rollout. See :func:`compute_gae` for semantics.
        ``sample_mask`` (True where an agent was in the game): only those samples' returns enter the
        running statistics (the agents' own ends are in ``terminated``: :mod:`warp_drive.training.agent_masks`).

        Shapes:
            rewards, values, final_values, sample_mask: (B, E, A); last_values: (E, A);
            terminated, truncated: (B, E) or (B, E, A); outputs: (B, E, A).
        """
        to_reward_units = self.values_in_reward_units
        if self.reward_normalizer is not None:
            rewards = self.reward_normalizer(rewards, terminated, truncated, sample_mask)
        advantages, returns = compute_gae(
            rewards,
            to_reward_units(values),
            to_reward_units(last_values),
            terminated,
            truncated,
            None if final_values is None else to_reward_units(final_values),
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
        )
        if self.value_normalizer is not None:
            self.value_normalizer.update(returns, sample_mask)
        return advantages, returns

    def compute_loss(
        self,
        head_outputs: Sequence[HeadOutput],
        values: Tensor,
        actions: Tensor,
        advantages: Tensor,
        returns: Tensor,
        *,
        timestep: int,
        old_log_probs: Tensor | None = None,
        old_values: Tensor | None = None,
        advantage_stats: tuple[Tensor, Tensor] | None = None,
        coefficients: tuple[Tensor, Tensor] | None = None,
        sample_mask: Tensor | None = None,
    ) -> tuple[Tensor, Metrics]:
        """Loss and metrics on a (mini)batch. ``old_*`` are accepted and ignored by A2C.

        Args:
            head_outputs: The model's head outputs on the batch observations (with gradient).
            values: The model's values on the batch observations (with gradient).
            actions: Taken actions, one column per categorical head / Gaussian dimension.
            advantages: From :meth:`compute_advantages`.
            returns: From :meth:`compute_advantages` (reward units).
            timestep: Env timestep at which the coefficient schedules are evaluated.
            old_log_probs, old_values: Unused (PPO interface).
            advantage_stats: ``(mean, std)`` of the advantages of the whole minibatch when this
                call sees one chunk of it (with ``normalize_advantage``); None: this batch's own.
            coefficients: ``(vf_loss_coeff, entropy_coeff)`` (0-d tensors) to use instead of the
                schedules' values at ``timestep``.
            sample_mask: True where the sample counts (its agent was in the game; bool): every loss term,
                the advantage standardization and every metric is a mean over those samples only. None: all.

        Shapes:
            values, advantages, returns, sample_mask: (N...), e.g. (B, E, A); actions: (N..., n_columns).
        """
        log_prob, entropy = log_prob_and_entropy(head_outputs, actions)
        c_vf, c_ent = self.coefficients(timestep) if coefficients is None else coefficients
        targets = self.value_targets(returns)
        loss, metrics = self._loss(log_prob, old_log_probs, old_values, entropy, values, advantages, targets,
                                   vf_loss_coeff=c_vf, entropy_coeff=c_ent, normalize_advantage=self.normalize_advantage,
                                   advantage_stats=advantage_stats,
                                   **({} if sample_mask is None else {"sample_mask": sample_mask}))
        metrics.update({
            "loss": loss.detach(),
            "mean_return": masked_mean(returns.detach(), sample_mask),
            "mean_value": masked_mean(self.values_in_reward_units(values.detach()), sample_mask),
            "explained_variance": explained_variance(values, targets, sample_mask),
            "vf_loss_coeff": torch.as_tensor(c_vf, dtype=loss.dtype, device=loss.device).detach(),
            "entropy_coeff": torch.as_tensor(c_ent, dtype=loss.dtype, device=loss.device).detach(),
        })
        return loss, metrics

    def coefficients(self, timestep: int) -> tuple[float, float]:
        """``(vf_loss_coeff, entropy_coeff)``: the schedules' values at env timestep ``timestep``."""
        return self.vf_loss_coeff.get_param_value(timestep), self.entropy_coeff.get_param_value(timestep)

    def _loss(self, log_prob: Tensor, old_log_probs: Tensor | None, old_values: Tensor | None, *tensors: Tensor,
              **terms: Any) -> tuple[Tensor, Metrics]:
        """The loss from per-sample quantities: ``tensors`` (entropy, values, advantages, value targets) and
        ``terms`` are :func:`a2c_loss`'s; A2C ignores the ``old_*``."""
        return a2c_loss(log_prob, *tensors, **terms)
