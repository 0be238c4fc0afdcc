"""The rollout record of policies that learn from transitions ``(s, a, r, s', terminated)``.

The rollout fills the rows: ``obs`` (the observations each action was taken on), ``actions``
(what :meth:`~warp_drive.training.algorithms.base.Policy.act` returned), ``next_obs`` (right after
the env step, before a reset: what a time-limit truncation bootstraps from), and, at the end of the
rollout, ``rewards`` and the ``terminated`` / ``truncated`` flags.

Shapes (time first): obs, next_obs ``(B, E, A, *obs)``; actions ``(B, E, A, d)``; rewards
``(B, E, A)``; terminated, truncated ``(B, E)`` bool.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

Tensor = torch.Tensor


@dataclass
class TransitionBuffers:
    """One policy's transitions of one rollout (see the module docstring)."""

    obs: Tensor
    next_obs: Tensor
    actions: Tensor
    rewards: Tensor
    terminated: Tensor
    truncated: Tensor

    @classmethod
    def allocate(cls, steps: int, obs_example: Tensor, action_dim: int) -> "TransitionBuffers":
        """Zeroed rows for ``steps`` env steps; ``obs_example``: one step's ``(E, A, *obs)`` observations."""
        E, A = obs_example.shape[:2]
        dev = obs_example.device

        def like() -> Tensor:
            return torch.zeros((steps, *obs_example.shape), dtype=obs_example.dtype, device=dev)

        def flags() -> Tensor:
            return torch.zeros((steps, E), dtype=torch.bool, device=dev)

        return cls(like(), like(), torch.zeros((steps, E, A, action_dim), dtype=torch.float32, device=dev),
                   torch.zeros((steps, E, A), dtype=torch.float32, device=dev), flags(), flags())

    def flat(self) -> dict[str, Tensor]:
        """Every transition as one row: obs, next_obs ``(B*E*A, *obs)``, actions ``(B*E*A, d)``,
        rewards, terminated (float 0/1), truncated ``(B*E*A,)``."""
        B, E, A = self.rewards.shape
        obs_shape = self.obs.shape[3:]

        def per_agent(flags: Tensor) -> Tensor:
            return flags[..., None].expand(B, E, A).reshape(-1)

        return {"obs": self.obs.reshape(-1, *obs_shape), "next_obs": self.next_obs.reshape(-1, *obs_shape),
                "actions": self.actions.reshape(-1, self.actions.shape[-1]), "rewards": self.rewards.reshape(-1),
                "terminated": per_agent(self.terminated).float(), "truncated": per_agent(self.truncated)}
