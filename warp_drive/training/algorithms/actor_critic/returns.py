"""Generalized advantage estimation and bootstrapped discounted returns.

Index ``t`` of a rollout batch holds the transition ``(s_t, a_t, r_t, s_{t+1})``: the observation
before step ``t``, the action, and the reward and done flags that step produced. The value used
to bootstrap step ``t`` is

* ``0`` if the episode was **terminated** at ``t`` (a true end: no future reward),
* ``final_values[t]`` = V(final observation of the episode) if it was **truncated** at ``t``
  (time limit: the future is cut only by the clock, so it is estimated),
* ``values[t + 1]`` otherwise, and ``last_values`` = V(s_B) for the last step of the batch.

Termination wins when both flags are set. Either flag ends the GAE recursion at ``t``, since
``values[t + 1]`` then belongs to the next episode (after the env reset).
"""

from __future__ import annotations

import torch

from warp_drive.errors import DataShapeError, UsageError

Tensor = torch.Tensor


def flags_like(flags: Tensor, like: Tensor, name: str) -> Tensor:
    """Converts ``(B, E)`` or ``(B, E, *A)`` done flags to a bool tensor broadcastable to ``like``."""
    if flags.shape[:2] != like.shape[:2] or flags.dim() > like.dim():
        raise DataShapeError(
            f"`{name}` has shape {tuple(flags.shape)}; expected (B, E)={tuple(like.shape[:2])} "
            f"or the rewards' shape {tuple(like.shape)}."
        )
    flags = flags > 0 if flags.dtype != torch.bool else flags
    if flags.dim() < like.dim():
        flags = flags.reshape(flags.shape + (1,) * (like.dim() - flags.dim()))
    if flags.shape[2:] != like.shape[2:] and any(s != 1 for s in flags.shape[2:]):
        raise DataShapeError(
            f"`{name}` has shape {tuple(flags.shape)}; its trailing dims must match the "
            f"rewards' {tuple(like.shape)}."
        )
    return flags.to(like.device)


def _check_shape(name: str, tensor: Tensor, shape: torch.Size, expected: str) -> None:
    if tensor.shape != shape:
        raise DataShapeError(f"`{name}` has shape {tuple(tensor.shape)}; expected {expected}{tuple(shape)}.")


def compute_gae(
    rewards: Tensor,
    values: Tensor,
    last_values: Tensor,
    terminated: Tensor,
    truncated: Tensor | None = None,
    final_values: Tensor | None = None,
    *,
    gamma: float,
    gae_lambda: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """Computes GAE(gamma, lambda) advantages and the matching returns (value targets).

    With ``gae_lambda == 1`` the returns are the plain bootstrapped discounted returns
    ``G_t = r_t + gamma * G_{t+1}`` (cut at episode ends) and ``advantages = G - V``.
    Runs a reverse scan over time, vectorised over envs and agents; no host synchronization.
    Inputs are detached; outputs carry no gradient.

    Args:
        rewards: Reward of each step.
        values: V(s_t) of each step's observation.
        last_values: V(s_B), the value of the observation after the batch's last step.
        terminated: Nonzero where the episode terminated at that step (no bootstrap).
        truncated: Nonzero where the episode was cut by a time limit at that step
            (bootstrap from ``final_values``). None means no truncations.
        final_values: V(final observation) at truncated steps; read only where ``truncated`` is
            set (other entries may hold anything finite, e.g. zeros). Required with
            ``truncated``.
        gamma: Discount factor in (0, 1].
        gae_lambda: GAE lambda in [0, 1].

    Returns:
        ``(advantages, returns)``, both with the shape and dtype of ``rewards``.

    Shapes:
        rewards, values, final_values: (B, E, *agent_dims), e.g. (B, E, A).
        last_values: (E, *agent_dims).
        terminated, truncated: (B, E) (broadcast over agents) or (B, E, *agent_dims).
    """
    _check_shape("values", values, rewards.shape, "the rewards' ")
    _check_shape("last_values", last_values, rewards.shape[1:], "(E, *agent_dims)=")
    values = values.detach().to(rewards.dtype)
    last_values = last_values.detach().to(rewards.dtype)
    ended = flags_like(terminated, rewards, "terminated")
    next_values = torch.cat((values[1:], last_values.unsqueeze(0)), dim=0)
    if truncated is not None:
        if final_values is None:
            raise UsageError(
                "`truncated` was given without `final_values`; pass V(final observation) for "
                "truncated steps (zeros where not truncated), or fold truncations into "
                "`terminated` to treat them as true ends."
            )
        _check_shape("final_values", final_values, rewards.shape, "the rewards' ")
        cut = flags_like(truncated, rewards, "truncated")
        final_values = final_values.detach().to(rewards.dtype)
        next_values = torch.where(cut, final_values, next_values)
        continues = ~(ended | cut)
    else:
        continues = ~ended
    next_values = next_values.masked_fill(ended, 0.0)
    deltas = rewards + gamma * next_values - values
    decay = (gamma * gae_lambda) * continues.to(rewards.dtype)
    decay = decay.expand_as(rewards)
    advantages = torch.empty_like(rewards)
    running = torch.zeros_like(last_values)
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = deltas[t] + decay[t] * running
        advantages[t] = running
    return advantages, advantages + values


def discounted_returns(
    rewards: Tensor,
    last_values: Tensor,
    terminated: Tensor,
    truncated: Tensor | None = None,
    final_values: Tensor | None = None,
    *,
    gamma: float,
) -> Tensor:
    """Bootstrapped discounted returns ``G_t = r_t + gamma * (next value or G_{t+1})``.

    Same conventions as :func:`compute_gae` (which this calls with lambda = 1 and V = 0).

    Shapes:
        rewards: (B, E, *agent_dims); last_values: (E, *agent_dims);
        terminated, truncated: (B, E) or like rewards; returns: like rewards.
    """
    _, returns = compute_gae(
        rewards,
        torch.zeros_like(rewards),
        last_values,
        terminated,
        truncated,
        final_values,
        gamma=gamma,
        gae_lambda=1.0,
    )
    return returns
