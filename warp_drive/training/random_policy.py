"""The uniform-random policy that evaluation compares trained policies against.

Discrete and MultiDiscrete heads draw every action with equal probability. A Box draws every
element uniformly within its bounds; an unbounded element (an infinite bound) draws uniformly
from an interval of width 2 instead: ``[-1, 1]`` when both bounds are infinite, ``[low, low + 2]``
or ``[high - 2, high]`` when one is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from warp_drive.env.constants import Constants
from warp_drive.training.models.action_spec import action_heads_from_space


def box_sampling_bounds(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bounds a Box's elements are drawn from: its own where finite, else width 2 (module doc)."""
    low, high = np.asarray(low, np.float64).ravel(), np.asarray(high, np.float64).ravel()
    lo = np.where(np.isfinite(low), low, np.where(np.isfinite(high), high - 2.0, -1.0))
    hi = np.where(np.isfinite(high), high, lo + 2.0)
    return lo, hi


class UniformRandomActions:
    """Writes uniform-random actions for one policy's agents into the env's joint action placeholder.

    Args:
        wrapper: the :class:`~warp_drive.env_wrapper.EnvWrapper` the policy acts in.
        policy: the policy whose agents act at random (any object with ``agent_ids``,
            ``agent_index`` and ``contiguous_all``, as the trainers' policy states have).
        generator: the torch generator to draw from (on the wrapper's device).
    """

    def __init__(self, wrapper: Any, policy: Any, generator: torch.Generator) -> None:
        space = wrapper.env.action_space[policy.agent_ids[0]]
        self.spec = action_heads_from_space(space)
        self.policy = policy
        self.generator = generator
        self.placeholder = wrapper.cuda_data_manager.data_on_device_via_torch(Constants.ACTIONS)
        dev = self.placeholder.device
        if self.spec.is_gaussian:
            lo, hi = box_sampling_bounds(space.low, space.high)
            self.offset = torch.as_tensor(lo, dtype=torch.float32, device=dev)
            self.scale = torch.as_tensor(hi - lo, dtype=torch.float32, device=dev)
        else:
            self.offset = torch.zeros(len(self.spec.categorical), device=dev)
            self.scale = torch.as_tensor(self.spec.categorical, dtype=torch.float32, device=dev)
        self.shape = (self.placeholder.shape[0], policy.num_agents, self.spec.num_columns)

    @torch.no_grad()
    def write(self) -> None:
        """One step's actions of every env replica, written over whatever the placeholder held."""
        u = torch.rand(self.shape, generator=self.generator, device=self.placeholder.device)
        a = self.offset + u * self.scale
        if not self.spec.is_gaussian:  # floor(u * n) is uniform over 0..n-1 (u < 1)
            a = a.floor().clamp_(max=self.scale - 1)
        a = a.to(self.placeholder.dtype)
        if self.policy.contiguous_all and self.spec.num_columns == self.placeholder.shape[2]:
            self.placeholder.copy_(a)
        else:
            self.placeholder[..., : self.spec.num_columns].index_copy_(1, self.policy.agent_index, a)
