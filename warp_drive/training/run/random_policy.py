"""The uniform-random policy that evaluation compares trained policies against.

Discrete and MultiDiscrete heads draw every action with equal probability; a policy that reads the env's
``action_mask`` (:mod:`warp_drive.training.agent_masks`) draws every *legal* action of each head with equal
probability (every action where a head's mask allows none). A Box draws every
element uniformly within its bounds; an unbounded element (an infinite bound) draws uniformly
from an interval of width 2 instead: ``[-1, 1]`` when both bounds are infinite, ``[low, low + 2]``
or ``[high - 2, high]`` when one is.

Draws come from a ``torch.Generator`` or, for paired evaluations (common random numbers), from
:class:`EpisodeKeyedUniform`: a counter-based draw keyed by (seed, stream, env, episode, step,
agent, column), so an opponent acts alike in the same episode and step of two plays whatever the
other policies do and however long the other episodes last.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from warp_drive.vocab.constants import Constants
from warp_drive.training.models.action_spec import action_heads_from_space


def box_sampling_bounds(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bounds a Box's elements are drawn from: its own where finite, else width 2 (module doc)."""
    low, high = np.asarray(low, np.float64).ravel(), np.asarray(high, np.float64).ravel()
    lo = np.where(np.isfinite(low), low, np.where(np.isfinite(high), high - 2.0, -1.0))
    hi = np.where(np.isfinite(high), high, lo + 2.0)
    return lo, hi


_MASK32 = 0xFFFFFFFF
#: Distinct odd offsets mixed in with each key field (golden-ratio multiples), so zero fields do not cancel.
_FIELD_OFFSETS = tuple((0x9E3779B9 * (i + 1)) & _MASK32 for i in range(7))


def _mul32(x: torch.Tensor, m: int) -> torch.Tensor:
    """``x * m mod 2**32`` for int64 tensors holding 32-bit values, without int64 overflow."""
    return (x * (m & 0xFFFF) + (((x * (m >> 16)) & 0xFFFF) << 16)) & _MASK32


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (``lowbias32``, C. Wellons) of int64 tensors holding 32-bit values."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


class EpisodeKeyedUniform:
    """Uniform numbers in [0, 1) that are a pure function of (seed, stream, env, episode, step, agent,
    column): common random numbers for paired evaluations (module doc).

    Args:
        seed: the draws' seed.
        stream: which stream (e.g. the policy's index), so policies draw independently.
    """

    def __init__(self, seed: int, stream: int) -> None:
        h = torch.tensor([int(seed) & _MASK32], dtype=torch.int64)
        self.base = _mix32((_mix32((h + _FIELD_OFFSETS[0]) & _MASK32) ^ ((int(stream) + _FIELD_OFFSETS[1]) & _MASK32)))

    def __call__(self, shape: tuple[int, int, int], episode: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
        """``(E, A, C)`` float32 uniforms for envs ``0..E-1`` at their ``episode`` and ``step`` (``(E,)`` each)."""
        E, A, C = shape
        dev = episode.device
        h = self.base.to(dev)
        for i, field in enumerate((torch.arange(E, device=dev), episode.long(), step.long()), start=2):
            h = _mix32(h ^ ((field + _FIELD_OFFSETS[i]) & _MASK32))
        h = h.view(E, 1, 1)
        h = _mix32(h ^ ((torch.arange(A, device=dev).view(1, A, 1) + _FIELD_OFFSETS[5]) & _MASK32))
        h = _mix32(h ^ ((torch.arange(C, device=dev).view(1, 1, C) + _FIELD_OFFSETS[6]) & _MASK32))
        return (h >> 8).float() * (1.0 / 16777216.0)


class UniformRandomActions:
    """Writes uniform-random actions for one policy's agents into the env's joint action placeholder.

    Args:
        wrapper: the :class:`~warp_drive.env_wrapper.EnvWrapper` the policy acts in.
        policy: the policy whose agents act at random (any object with ``agent_ids``,
            ``agent_index`` and ``contiguous_all``, as the trainers' policy states have).
        generator: the torch generator to draw from (on the wrapper's device), or an
            :class:`EpisodeKeyedUniform` (then :meth:`write` takes each env's episode and step).
    """

    def __init__(self, wrapper: Any, policy: Any, generator: torch.Generator | EpisodeKeyedUniform) -> None:
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
        masks = getattr(getattr(policy, "inputs", None), "masks", None)  # the env's legal actions, if read
        self.mask = None
        if not self.spec.is_gaussian and masks is not None and masks.num_logits is not None:
            self.mask = wrapper.cuda_data_manager.data_on_device_via_torch(Constants.ACTION_MASK)

    def _legal(self, u: torch.Tensor) -> torch.Tensor:
        """Per categorical head, the ``floor(u * n)``-th of its ``n`` legal actions (``(E, A, heads)`` float)."""
        mask = self.mask if self.policy.contiguous_all else self.mask.index_select(1, self.policy.agent_index)
        mask = mask[..., : self.spec.num_logits] != 0
        cols = []
        for h, legal in enumerate(torch.split(mask, list(self.spec.categorical), -1)):
            count = legal.sum(-1)
            legal = legal | (count == 0)[..., None]  # a head whose mask allows nothing: every action
            n = legal.sum(-1)
            k = (u[..., h] * n).floor().clamp_(max=n - 1)
            cols.append((legal.cumsum(-1) <= k[..., None]).sum(-1))  # index of the (k + 1)-th legal action
        return torch.stack(cols, -1).to(torch.float32)

    @torch.no_grad()
    def write(self, episode: torch.Tensor | None = None, step: torch.Tensor | None = None) -> None:
        """One step's actions of every env replica, written over whatever the placeholder held.
        ``episode``, ``step``: ``(E,)`` each env's episode and step within it (keyed draws only)."""
        if isinstance(self.generator, EpisodeKeyedUniform):
            if episode is None or step is None:
                raise TypeError("keyed uniform-random actions need each env's episode and step")
            u = self.generator(self.shape, episode, step)
        else:
            u = torch.rand(self.shape, generator=self.generator, device=self.placeholder.device)
        a = self.offset + u * self.scale
        if self.mask is not None:
            a = self._legal(u)
        elif not self.spec.is_gaussian:  # floor(u * n) is uniform over 0..n-1 (u < 1)
            a = a.floor().clamp_(max=self.scale - 1)
        a = a.to(self.placeholder.dtype)
        if self.policy.contiguous_all and self.spec.num_columns == self.placeholder.shape[2]:
            self.placeholder.copy_(a)
        else:
            self.placeholder[..., : self.spec.num_columns].index_copy_(1, self.policy.agent_index, a)
