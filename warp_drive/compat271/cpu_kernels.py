"""NumPy twins of WarpDrive 2.7.1's reset, log and random-state kernels (``compat_271.cuh``).

Always in the CPU backend's kernel table (:data:`warp_drive.managers.cpu_kernels.CORE_KERNELS`). Each takes
2.7.1's parameter list. The reset kernels restore a done env's row or slice from its saved copy (pools and the
start-state hook are in :mod:`~warp_drive.managers.cpu_core.reset`); the log kernels are
:func:`~warp_drive.managers.cpu_core.log.log_one_step` with 2.7.1's argument order; the random-state kernels are
no-ops (counter-based Philox draws need no per-thread state).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from warp_drive.managers.cpu_core.log import log_one_step
from warp_drive.managers.cpu_core.words import row_view, word_view

def _reset_env_slices(data: np.ndarray, ref: np.ndarray, done: np.ndarray, slice_size: int, force_reset: int) -> None:
    done_w = word_view(done, np.int32)
    envs = np.arange(done_w.size) if force_reset > 0 else np.flatnonzero(done_w > 0)
    if slice_size <= 0 or envs.size == 0:
        return
    target = row_view(data, np.uint32, done_w.size, slice_size)
    target[envs] = row_view(ref, np.uint32, done_w.size, slice_size)[envs]


def reset_in_float_when_done_2d(data: np.ndarray, ref: np.ndarray, done: np.ndarray, feature_dim: int,
                                force_reset: int) -> None:
    """Restores env e's row of an ``(E, feature_dim)`` array from ``ref`` where forced or done."""
    _reset_env_slices(data, ref, done, int(feature_dim), int(force_reset))


def reset_in_float_when_done_3d(data: np.ndarray, ref: np.ndarray, done: np.ndarray, agent_dim: int,
                                feature_dim: int, force_reset: int) -> None:
    """Restores env e's ``(agent_dim, feature_dim)`` slice from ``ref`` where forced or done."""
    _reset_env_slices(data, ref, done, int(agent_dim) * int(feature_dim), int(force_reset))


reset_in_int_when_done_2d = reset_in_float_when_done_2d
reset_in_int_when_done_3d = reset_in_float_when_done_3d


def log_one_step_in_float(log: np.ndarray, data: np.ndarray, feature_dim: int, timestep: int,
                          episode_length: int, env_id: int) -> None:
    """Copies env ``env_id``'s ``(num_agents, feature_dim)`` slice into row ``timestep`` of ``log``
    (``(episode_length + 1, num_agents, feature_dim)``); note 2.7.1's argument order."""
    row = word_view(log, np.uint32).size // (int(episode_length) + 1)
    log_one_step(log, data, row, int(timestep), int(env_id), int(episode_length))


log_one_step_in_int = log_one_step_in_float


def init_random(seed: int) -> None:
    """2.7.1 seeded per-thread generators here; counter-based draws need no state (no-op)."""


def free_random() -> None:
    """2.7.1 freed its per-thread generators here (no-op)."""


#: Kernel name -> NumPy twin, merged into :data:`warp_drive.managers.cpu_kernels.CORE_KERNELS`.
KERNELS: dict[str, Callable[..., None]] = {
    "reset_in_float_when_done_2d": reset_in_float_when_done_2d,
    "reset_in_int_when_done_2d": reset_in_int_when_done_2d,
    "reset_in_float_when_done_3d": reset_in_float_when_done_3d,
    "reset_in_int_when_done_3d": reset_in_int_when_done_3d,
    "log_one_step_in_float": log_one_step_in_float,
    "log_one_step_in_int": log_one_step_in_int,
    "init_random": init_random,
    "free_random": free_random,
}
