"""DDPG's parts: target updates, Ornstein-Uhlenbeck noise, n-step targets, one gradient step.

* **Exploration**: ``a = mu(s) + scale * x`` with one Ornstein-Uhlenbeck state ``x`` per
  (env, agent, action dim) kept on the device (:class:`OUNoise`, 2.7.1's formula).
* **n-step targets** (``trainer.n_step``): :func:`nstep_returns` and :func:`bootstrap_targets`; at a time limit
  with ``trainer.bootstrap_at_time_limit`` the target bootstraps from the episode's final observation (before a reset).
* **Updates**: critic on ``MSE(Q(s, a), y)``, then actor on ``-mean Q(s, mu(s))`` with the critic's parameters
  frozen, gradient clipping per network, then Polyak updates of both targets with ``tau``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError

Tensor = torch.Tensor


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging in place: ``target <- (1 - tau) * target + tau * source``."""
    if not 0.0 <= float(tau) <= 1.0:
        raise ConfigError(f"tau={tau} must lie in [0, 1] (the share of the source weights)")
    for t, s in zip(target.parameters(), source.parameters()):
        t.lerp_(s, float(tau))


@torch.no_grad()
def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copies the source's parameters into the target in place."""
    for t, s in zip(target.parameters(), source.parameters()):
        t.copy_(s)


class OUNoise:
    """Ornstein-Uhlenbeck exploration noise, one state per row, on the device.

    ``x <- (1 - damping) * x + stddev * z`` with ``z ~ N(0, 1)``; the perturbed action is
    ``mu + scale * x``. The stationary standard deviation is ``stddev / sqrt(1 - (1 - damping)^2)``
    and the lag-k autocorrelation ``(1 - damping)^k``. With ``scale == 0`` the action is ``mu`` and
    the state does not move (2.7.1's deterministic evaluation).

    Args:
        shape: State shape, e.g. (E, A, d).
        device: Where the state lives.
        generator: torch Generator on ``device`` (seeded by the trainer).
    """

    def __init__(self, shape: Sequence[int], device: torch.device, generator: torch.Generator | None = None) -> None:
        self.state = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
        self.generator = generator

    def step(self, damping: float, stddev: float) -> Tensor:
        """Advance the process one step; returns the new state."""
        z = torch.randn(self.state.shape, device=self.state.device, generator=self.generator)
        self.state.mul_(1.0 - float(damping)).add_(z, alpha=float(stddev))
        return self.state

    def perturb(self, mu: Tensor, damping: float, stddev: float, scale: float) -> Tensor:
        """``mu + scale * x`` after one step of ``x`` (``mu`` itself when ``scale`` is 0)."""
        if scale == 0:
            return mu
        return mu + float(scale) * self.step(damping, stddev)


def nstep_returns(rewards: Tensor, terminated: Tensor, truncated: Tensor, gamma: float, n: int) -> tuple[Tensor, Tensor, Tensor]:
    """The reward part, bootstrap step and bootstrap coefficient of every step's n-step target.

    For each step t the target is ``R_t + coef_t * Q'(s'_(last_t))``, where ``s'_k`` is the
    observation right after step k (before a reset), ``R_t = sum_(k<m) gamma^k r_(t+k)`` and
    ``coef_t = gamma^m`` (0 if step ``t+m-1`` terminated). ``m <= n`` stops after the first step
    that ends an episode (terminated or truncated) and at the last step of the rollout.

    Args:
        rewards: (B, E, A) float.
        terminated: (B, E) bool, episode ended for real (no bootstrap).
        truncated: (B, E) bool, episode cut by the time limit (bootstrap from its final obs).
        gamma: Discount.
        n: Horizon >= 1.

    Returns:
        ``(R (B, E, A), last (B, E) long, coef (B, E) float)``.
    """
    B, E = terminated.shape
    dev = rewards.device
    R = torch.zeros_like(rewards)
    coef = torch.zeros((B, E), dtype=rewards.dtype, device=dev)
    last = torch.zeros((B, E), dtype=torch.long, device=dev)
    alive = torch.ones((B, E), dtype=torch.bool, device=dev)
    t_idx = torch.arange(B, device=dev)[:, None].expand(B, E)
    for k in range(max(1, int(n))):
        rows = B - k  # steps t = 0 .. B-k-1 still have step t+k inside the rollout
        if rows <= 0:
            break
        a = alive[:rows]
        R[:rows] += torch.where(a[..., None], (gamma ** k) * rewards[k:], torch.zeros_like(rewards[k:]))
        term, trunc = terminated[k:], truncated[k:]
        end = (term | trunc) | (t_idx[:rows] + k == B - 1) | (k == n - 1)
        stop = a & end
        coef[:rows] = torch.where(stop, torch.where(term, 0.0, gamma ** (k + 1)).to(coef.dtype), coef[:rows])
        last[:rows] = torch.where(stop, t_idx[:rows] + k, last[:rows])
        alive[:rows] = a & ~end
    return R, last, coef


def ddpg_update(nets: "DDPGNets", obs: Tensor, actions: Tensor, targets: Tensor, tau: float,
                max_grad_norm: float | None, *, actor_optimizer: torch.optim.Optimizer | None = None,
                critic_optimizer: torch.optim.Optimizer | None = None,
                backward: Callable[[Tensor], None] | None = None,
                clip_gradients: Callable[[Any, "float | None"], None] | None = None) -> dict[str, Tensor]:
    """One critic step, one actor step (critic frozen), then soft target updates.

    Args:
        nets: the four networks and two optimizers.
        obs: ``(*lead, *obs)``; actions: ``(*lead, d)``; targets: ``(*lead,)`` n-step targets y.
        tau: Polyak rate.
        max_grad_norm: clip level of each network's gradient norm (None: no clipping).
        actor_optimizer, critic_optimizer: step these instead of the nets' own (a driver's wrappers).
        backward: replaces ``loss.backward()``.
        clip_gradients: ``clip_gradients(optimizer, max_norm or None)`` replaces the clipping (a
            driver's, e.g. Lightning's, which unscales mixed-precision gradients first).

    Returns:
        Metric tensors (no host sync).
    """
    actor_opt = actor_optimizer or nets.actor_optimizer
    critic_opt = critic_optimizer or nets.critic_optimizer
    run_backward = backward or (lambda loss: loss.backward())
    q = nets.train_critic(obs, actions)
    critic_loss = torch.nn.functional.mse_loss(q, targets)
    critic_opt.zero_grad(set_to_none=True)
    run_backward(critic_loss)
    critic_norm = _clip(nets.critic, critic_opt, max_grad_norm, clip_gradients)
    critic_opt.step()
    critic_params = [p for p in nets.critic.parameters() if p.requires_grad]
    for p in critic_params:  # the actor's loss must not train the critic (2.7.1 defect 9.6)
        p.requires_grad_(False)
    try:
        actor_loss = -nets.critic(obs, nets.train_actor(obs)).mean()
        actor_opt.zero_grad(set_to_none=True)
        run_backward(actor_loss)
    finally:
        for p in critic_params:
            p.requires_grad_(True)
    actor_norm = _clip(nets.actor, actor_opt, max_grad_norm, clip_gradients)
    actor_opt.step()
    soft_update(nets.target_actor, nets.actor, tau)
    soft_update(nets.target_critic, nets.critic, tau)
    return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(), "q_mean": q.detach().mean(),
            "target_mean": targets.mean(), "grad_norm_actor": actor_norm.detach(), "grad_norm_critic": critic_norm.detach()}


def _clip(net: nn.Module, optimizer: Any, max_grad_norm: float | None,
          hook: Callable[[Any, "float | None"], None] | None) -> Tensor:
    """The gradient norm of ``net`` before clipping; clipped to ``max_grad_norm`` (None: not), by
    ``hook`` when a driver gives one."""
    if hook is None:
        return nn.utils.clip_grad_norm_(net.parameters(), math.inf if max_grad_norm is None else float(max_grad_norm))
    norm = nn.utils.clip_grad_norm_(net.parameters(), math.inf)
    hook(optimizer, max_grad_norm)
    return norm


@torch.no_grad()
def bootstrap_targets(nets: "DDPGNets", returns: Tensor, coef: Tensor, boot_obs: Tensor) -> Tensor:
    """``returns + coef * Q'(s', mu'(s'))`` with the target networks."""
    return returns + coef * nets.target_critic(boot_obs, nets.target_actor(boot_obs))


@dataclass
class DDPGNets:
    """A policy's networks and optimizers (``train_*`` are the DDP-wrapped ones when distributed)."""

    actor: nn.Module
    critic: nn.Module
    target_actor: nn.Module
    target_critic: nn.Module
    actor_optimizer: torch.optim.Optimizer
    critic_optimizer: torch.optim.Optimizer
    train_actor: nn.Module | None = None
    train_critic: nn.Module | None = None

    def __post_init__(self) -> None:
        self.train_actor = self.train_actor or self.actor
        self.train_critic = self.train_critic or self.critic
        for m in (self.target_actor, self.target_critic):
            m.requires_grad_(False)
