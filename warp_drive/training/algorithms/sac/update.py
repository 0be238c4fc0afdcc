"""One SAC gradient step: the twin critics, the actor, the temperature, then the target critics.

For a minibatch of transitions ``(s, a, r, s', not_done)`` (actions in the unit box)::

    a' ~ pi(.|s'),  y = r + gamma * not_done * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))
    critic loss = 1/2 sum_i mean (Q_i(s, a) - y)^2
    actor loss  = mean (alpha * log pi(a~|s) - min_i Q_i(s, a~)),  a~ ~ pi(.|s) reparameterized
                  (the critics frozen: the actor's loss trains the actor only)
    alpha loss  = -mean log_alpha * (log pi(a~|s) + target_entropy)          (learned alpha only)
    Q'_i <- (1 - tau) Q'_i + tau Q_i

``log pi`` is the squashed Gaussian's density in the unit box
(:func:`~warp_drive.training.models.squashed_gaussian.squashed_sample`). Nothing is read back
from the device: the metrics are 0-d tensors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from warp_drive.training.algorithms.ddpg.parts import soft_update
from warp_drive.training.algorithms.actor_critic.update import grad_norm_and_clip
from warp_drive.training.distributed import all_reduce_mean
from warp_drive.training.models.squashed_gaussian import squashed_sample

Tensor = torch.Tensor


class TwinQ(nn.Module):
    """Two action-value networks ``Q_1(s, a), Q_2(s, a)`` (parameters ``q1.*``, ``q2.*``).

    Shapes: obs ``(*lead, *obs)``, action ``(*lead, d)`` -> two ``(*lead,)`` values.
    """

    def __init__(self, q1: nn.Module, q2: nn.Module) -> None:
        super().__init__()
        self.q1, self.q2 = q1, q2

    def forward(self, obs: Tensor, action: Tensor) -> tuple[Tensor, Tensor]:
        return self.q1(obs, action), self.q2(obs, action)


@dataclass
class SACNets:
    """A SAC policy's networks: ``train_*`` are the ones that take gradient steps (DDP wrappers
    across ranks, else the networks themselves); ``log_alpha`` is a 0-d parameter."""

    actor: nn.Module
    critic: TwinQ
    target_critic: TwinQ
    log_alpha: nn.Parameter
    train_actor: nn.Module | None = None
    train_critic: nn.Module | None = None

    def __post_init__(self) -> None:
        self.train_actor = self.train_actor or self.actor
        self.train_critic = self.train_critic or self.critic
        self.target_critic.requires_grad_(False)


@dataclass(frozen=True)
class StepSettings:
    """The constants of a gradient step: discount, Polyak rate, temperature rule, clipping.

    ``fixed_alpha``: the temperature when it is not learned (None: ``exp(log_alpha)``, learned
    towards ``target_entropy``); ``max_grad_norm``: clip level per network, or None.
    """

    gamma: float
    tau: float
    target_entropy: float
    fixed_alpha: float | None = None
    max_grad_norm: float | None = None


@dataclass
class StepHooks:
    """What a driver may take over (:class:`~warp_drive.training.algorithms.base.UpdateContext`).

    ``optimizers``: ``{"actor", "critic", "alpha"}`` -> the optimizer to step; ``backward``:
    ``backward(loss)``; ``clip``: ``clip(optimizer, max_norm or None)`` replaces the clipping (the
    norms are then measured only with ``track_grad_norm``); ``autocast_dtype``: the forwards' dtype.
    """

    optimizers: Mapping[str, Any]
    backward: Callable[[Tensor], None] = field(default=lambda loss: loss.backward())
    clip: Callable[[Any, "float | None"], None] | None = None
    track_grad_norm: bool = True
    autocast_dtype: torch.dtype | None = None


def _autocast(device: torch.device, dtype: torch.dtype | None) -> Any:
    return contextlib.nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


def _step(name: str, loss: Tensor, params: list[nn.Parameter], hooks: StepHooks, max_norm: float | None,
          metrics: dict[str, Tensor]) -> None:
    """Zero, backward, clip (or the driver's clip), step ``hooks.optimizers[name]``."""
    optimizer = hooks.optimizers[name]
    optimizer.zero_grad(set_to_none=True)
    hooks.backward(loss)
    if hooks.clip is None:
        metrics[f"grad_norm_{name}"] = grad_norm_and_clip(params, max_norm).detach()
    else:
        if hooks.track_grad_norm:
            metrics[f"grad_norm_{name}"] = grad_norm_and_clip(params, None).detach()
        hooks.clip(optimizer, max_norm)
    optimizer.step()


def sac_step(nets: SACNets, batch: Mapping[str, Tensor], settings: StepSettings, hooks: StepHooks,
             generator: torch.Generator | None = None) -> dict[str, Tensor]:
    """One gradient step of critics, actor and temperature on ``batch``, then the Polyak update.

    Args:
        nets: the networks; batch: ``obs``, ``next_obs`` ``(M, *obs)``, ``actions`` (M, d) in the unit
            box, ``rewards``, ``not_done`` (M,) float; generator: the policy draws' generator.

    Returns:
        ``critic_loss``, ``actor_loss``, ``alpha_loss``, ``alpha``, ``entropy`` (``-mean log pi``),
        ``q_mean``, ``target_mean`` and the gradient norms, as 0-d tensors.
    """
    obs, actions, next_obs = batch["obs"], batch["actions"], batch["next_obs"]
    device = batch["rewards"].device
    learned = settings.fixed_alpha is None
    alpha = nets.log_alpha.detach().exp() if learned else torch.tensor(settings.fixed_alpha, device=device)
    metrics: dict[str, Tensor] = {}
    with torch.no_grad(), _autocast(device, hooks.autocast_dtype):
        next_actions, next_log_prob = squashed_sample(*nets.actor(next_obs), generator)
        q1_next, q2_next = nets.target_critic(next_obs, next_actions)
        soft_value = torch.minimum(q1_next, q2_next).float() - alpha * next_log_prob
        target = batch["rewards"] + settings.gamma * batch["not_done"] * soft_value
    with _autocast(device, hooks.autocast_dtype):
        q1, q2 = nets.train_critic(obs, actions)
        critic_loss = 0.5 * ((q1.float() - target).pow(2).mean() + (q2.float() - target).pow(2).mean())
    _step("critic", critic_loss, list(nets.critic.parameters()), hooks, settings.max_grad_norm, metrics)

    critic_params = [p for p in nets.critic.parameters() if p.requires_grad]
    for p in critic_params:  # the actor's loss must not reach the critics
        p.requires_grad_(False)
    try:
        with _autocast(device, hooks.autocast_dtype):
            new_actions, log_prob = squashed_sample(*nets.train_actor(obs), generator)
            q1_pi, q2_pi = nets.critic(obs, new_actions)
            actor_loss = (alpha * log_prob - torch.minimum(q1_pi, q2_pi).float()).mean()
        _step("actor", actor_loss, list(nets.actor.parameters()), hooks, settings.max_grad_norm, metrics)
    finally:
        for p in critic_params:
            p.requires_grad_(True)

    log_prob = log_prob.detach()
    if learned:
        alpha_loss = -(nets.log_alpha * (log_prob + settings.target_entropy)).mean()
        optimizer = hooks.optimizers["alpha"]
        optimizer.zero_grad(set_to_none=True)
        hooks.backward(alpha_loss)
        if nets.log_alpha.grad is not None:  # one temperature on every rank
            nets.log_alpha.grad.copy_(all_reduce_mean(nets.log_alpha.grad))
        optimizer.step()
        metrics["alpha_loss"] = alpha_loss.detach()
    else:
        metrics["alpha_loss"] = torch.zeros((), device=device)
    soft_update(nets.target_critic, nets.critic, settings.tau)
    metrics.update(critic_loss=critic_loss.detach(), actor_loss=actor_loss.detach(), alpha=alpha.float(),
                   entropy=-log_prob.mean(), q_mean=q1.detach().float().mean(), target_mean=target.mean())
    return metrics
