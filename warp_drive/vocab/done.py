"""How an episode ended: the one rule that splits the done flag into (terminated, truncated)."""

from __future__ import annotations

from typing import Any


def split_done(done: Any, timestep: Any, episode_length: int, truncated: Any = None) -> tuple[Any, Any]:
    """``(terminated, truncated)`` bool arrays from the step's flags (torch tensors or NumPy arrays,
    device ops only; any matching shapes).

    ``done > 0`` ends the episode. With ``truncated`` (``Constants.TRUNCATED``, written by envs
    whose class sets ``writes_truncation``), an ended episode was truncated where that flag is
    set and terminated otherwise. Without it (2.7.1 kernels write only ``_done_``), the time
    limit decides: truncated where ``done == 1`` and ``timestep >= episode_length`` (``done == 2``,
    the MountainCars' goal, is always a termination); such an env whose natural end falls exactly
    on the last step is then reported truncated.
    """
    ended = done > 0
    if truncated is None:
        cut = (done == 1) & (timestep >= episode_length)
    else:
        cut = ended & (truncated > 0)
    return ended & ~cut, cut
