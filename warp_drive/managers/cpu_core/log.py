"""NumPy twins of the episode-log kernels of ``log.cuh``: copy one env's row into a step's log row,
and keep the mask of valid log rows."""

from __future__ import annotations

import numpy as np

from warp_drive.managers.cpu_core.words import word_view

__all__ = ["log_one_step", "reset_log_mask", "update_log_mask"]


def log_one_step(
    log: np.ndarray,
    data: np.ndarray,
    feature_size: int,
    t: int,
    env_id: int,
    episode_length: int,
) -> None:
    """Copies env ``env_id``'s row of ``data`` (``(num_envs, feature_size)`` 4-byte words) into row
    ``t`` of ``log`` (``(episode_length + 1, feature_size)``); nothing happens unless
    ``0 <= t <= episode_length`` and ``0 <= env_id < num_envs``. Twin of ``log_one_step`` (``log.cuh``).
    """
    if not 0 <= t <= episode_length or feature_size <= 0:
        return
    words = word_view(data, np.uint32)
    if not 0 <= env_id < words.size // feature_size:
        return
    out = word_view(log, np.uint32)
    out[t * feature_size : (t + 1) * feature_size] = words[env_id * feature_size : (env_id + 1) * feature_size]


def reset_log_mask(mask: np.ndarray, episode_length: int) -> None:
    """Clears the int32 ``mask[0 .. episode_length]``; twin of ``reset_log_mask`` (``log.cuh``)."""
    word_view(mask, np.int32)[: episode_length + 1] = 0


def update_log_mask(mask: np.ndarray, t: int, episode_length: int) -> None:
    """Marks row ``t`` of the int32 ``(episode_length + 1,)`` mask valid if rows ``0 .. t-1`` are
    (nothing unless ``0 <= t <= episode_length``); twin of ``update_log_mask`` (``log.cuh``)."""
    if not 0 <= t <= episode_length:
        return
    m = word_view(mask, np.int32)
    if t == 0 or m[t - 1] == 1:
        m[t] = 1
