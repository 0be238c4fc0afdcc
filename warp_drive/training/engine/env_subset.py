"""``trainer.neg_pos_env_ratio``: train on the envs whose rollout holds a success, and a share of the others."""

from __future__ import annotations

from collections.abc import Sequence

import torch

Tensor = torch.Tensor


def env_subset(positive: Tensor, ratio: float, minibatch_rows: Sequence[tuple[int, int]],
               generator: torch.Generator) -> Tensor | None:
    """The envs to train on this iteration (sorted), or None for all.

    Envs whose rollout holds a success (``_done_ == 2``) are kept, plus at most ``ratio`` times as
    many others drawn at random; the count is raised to the next size that every policy's
    minibatches divide. One host sync.

    Args:
        positive: (E,) bool, the envs whose rollout holds a success
            (:meth:`SharedBuffers.envs_ending <warp_drive.training.buffers.SharedBuffers.envs_ending>` ``(2)``).
        minibatch_rows: ``(rows per env, num_minibatches)`` of every trained policy.
    """
    num_pos = int(positive.sum())
    E = positive.shape[0]
    keep = num_pos + int(num_pos * ratio)
    while keep < E and any((rows * keep) % minibatches for rows, minibatches in minibatch_rows):
        keep += 1
    if num_pos == 0 or keep >= E:
        return None
    order = torch.randperm(E, device=positive.device, generator=generator)
    shuffled = order[torch.argsort((~positive[order]).int(), stable=True)]  # positives first, others shuffled
    return torch.sort(shuffled[:keep]).values
