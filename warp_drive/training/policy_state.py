"""What every policy of a run shares: the agent map check, episode statistics and the agent index
(the policies themselves: :mod:`warp_drive.training.algorithms`; their rollout record:
:mod:`warp_drive.training.buffers`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from warp_drive.errors import ConfigError

Tensor = torch.Tensor


def validate_policy_map(policy_map: dict[str, Sequence[int]], num_agents: int, tags: Sequence[str]) -> dict[str, list[int]]:
    """Check that every agent belongs to exactly one policy and that tags match the config."""
    if set(policy_map) != set(tags):
        raise ConfigError(
            f"policy_tag_to_agent_id_map has tags {sorted(policy_map)} but the config's policy section has "
            f"{sorted(tags)}; they must be the same"
        )
    seen: dict[int, str] = {}
    out: dict[str, list[int]] = {}
    for tag, ids in policy_map.items():
        ids = [int(i) for i in ids]
        if not ids:
            raise ConfigError(f"policy '{tag}' has no agents")
        for i in ids:
            if not 0 <= i < num_agents:
                raise ConfigError(f"policy '{tag}' lists agent {i}, outside [0, {num_agents})")
            if i in seen:
                raise ConfigError(f"agent {i} is mapped to both '{seen[i]}' and '{tag}'")
            seen[i] = tag
        out[tag] = ids
    missing = sorted(set(range(num_agents)) - set(seen))
    if missing:
        raise ConfigError(f"agents {missing[:10]}{'...' if len(missing) > 10 else ''} are not mapped to any policy")
    return out


@dataclass
class EpisodeStats:
    """Running and completed episode returns, on the device (no host sync until read)."""

    running_return: Tensor  # (E, A)
    running_length: Tensor  # (E,)
    return_sum: Tensor = field(default=None)  # type: ignore[assignment]
    length_sum: Tensor = field(default=None)  # type: ignore[assignment]
    count: Tensor = field(default=None)  # type: ignore[assignment]

    @classmethod
    def create(cls, num_envs: int, num_agents: int, device: torch.device) -> "EpisodeStats":
        z = lambda *s: torch.zeros(s, dtype=torch.float32, device=device)  # noqa: E731
        return cls(z(num_envs, num_agents), z(num_envs), z(), z(), z())

    def update_from_batch(self, rewards: Tensor, done: Tensor) -> None:
        """Add a rollout's rewards (B, E, A) and done flags (B, E), vectorised over time.

        Episode returns are differences of a running cumulative sum (which includes the return
        carried over from earlier batches) between consecutive done steps of each env.
        """
        B = rewards.shape[0]
        r = rewards.mean(2)
        s = torch.cumsum(r, 0) + self.running_return.mean(1)
        steps = torch.arange(1, B + 1, device=r.device, dtype=r.dtype)[:, None] + self.running_length
        idx = torch.arange(B, device=r.device)[:, None].expand_as(done)
        last_incl = torch.cummax(torch.where(done, idx, torch.full_like(idx, -1)), 0).values
        prev = torch.cat((torch.full_like(last_incl[:1], -1), last_incl[:-1]), 0)
        has_prev = prev >= 0
        prev_c = prev.clamp(min=0)
        ret = s - torch.where(has_prev, s.gather(0, prev_c), torch.zeros_like(s))
        length = steps - torch.where(has_prev, steps.gather(0, prev_c), torch.zeros_like(steps))
        d = done.to(r.dtype)
        self.return_sum += (ret * d).sum()
        self.length_sum += (length * d).sum()
        self.count += d.sum()
        last = last_incl[-1]
        any_done = last >= 0
        last_c = last.clamp(min=0)[None]
        carry_ret = s[-1] - torch.where(any_done, s.gather(0, last_c)[0], torch.zeros_like(s[-1]))
        carry_len = steps[-1] - torch.where(any_done, steps.gather(0, last_c)[0], torch.zeros_like(steps[-1]))
        # the running return is kept as a per-env mean over agents (broadcast to the agent axis)
        self.running_return.copy_(carry_ret[:, None].expand_as(self.running_return))
        self.running_length.copy_(carry_len)

    def reset_running(self) -> None:
        self.running_return.zero_()
        self.running_length.zero_()

    def pop(self) -> dict[str, Tensor]:
        """Mean per-agent episode return and mean length since the last pop (NaN if none ended)."""
        out = {"episode_return_mean": self.return_sum / self.count, "episode_length_mean": self.length_sum / self.count,
               "episodes": self.count.clone()}
        self.return_sum.zero_()
        self.length_sum.zero_()
        self.count.zero_()
        return out


def agent_index(ids: Sequence[int], device: torch.device) -> Tensor:
    """The policy's agent ids as a long tensor on ``device`` (row order of its batches)."""
    return torch.as_tensor(np.asarray(ids, dtype=np.int64), device=device)
