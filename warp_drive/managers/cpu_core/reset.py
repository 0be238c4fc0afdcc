"""NumPy twins of the reset kernels of ``reset.cuh``: restore done envs from their saved copies or
reset pools, then run an env's start-state hook; and the done / timestep clear.

Bit-identical to the CUDA kernels. Work is vectorised over envs; the loop runs only over the
registered entries. :func:`reset_env_rows` resets a block of a batch's envs exactly as the whole
batch would (the CPU rollout's env parts); :data:`reset_when_done` is it from env 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from warp_drive.vocab.start_state import StartKey
from warp_drive.managers.cpu_core.words import row_view, word_view
from warp_drive.utils.philox import philox_words, scale_bits_to_range

#: An env's NumPy start-state hook as the reset twin calls it: ``hook(rows, key)``.
StartStateHook = Callable[[np.ndarray, StartKey], None]

__all__ = ["POOL_STREAM", "StartStateHook", "reset_env_rows", "reset_when_done", "undo_done_flag_and_reset_timestep"]

#: Philox stream (key word 1) of the reset pools, "pool" in ASCII (WK_POOL_STREAM).
POOL_STREAM = 0x706F6F6C


def reset_env_rows(
    env_offset: int,
    dst: Sequence[np.ndarray],
    src: Sequence[np.ndarray],
    sizes: Sequence[int],
    pool_sizes: Sequence[int],
    num_entries: int,
    done: np.ndarray,
    timestep: np.ndarray,
    pool_counters: np.ndarray,
    seed: int,
    force_reset: int,
    undo_done: int,
    *,
    start_state: StartStateHook | None = None,
) -> None:
    """Restores every registered array of every done env of envs ``env_offset ..`` of a batch.

    Env ``e`` resets when ``force_reset`` or ``done[e] > 0``. For entry ``k``, ``sizes[k]`` 4-byte words are
    copied: ``dst[k][e] = src[k][row]`` with ``row = e`` (saved copy, ``pool_sizes[k] == 0``) or
    ``row = floor(u_e * pool_sizes[k])`` (pool). ``u_e`` is one draw per env and reset from
    Philox(key=(seed, POOL_STREAM), ctr=(e, pool_counters[e], 0, 0)), shared by all pool entries so pools stay
    aligned; ``pool_counters[e]`` then advances by one.

    Args:
        env_offset: Index of the first env in the whole batch (counter word 0 of its pool draw);
            ``dst``, the saved copies, ``done``, ``timestep`` and ``pool_counters`` start at that
            env (pools are whole), so a block of envs resets as the whole batch would.
        dst: Live arrays, ``num_envs * sizes[k]`` words each (float32 or int32).
        src: Saved copies (``num_envs`` rows) or pools (``pool_sizes[k]`` rows).
        sizes: Words per env row of each entry.
        pool_sizes: 0 for a saved copy, else the number of pool rows.
        num_entries: Number of entries used from the lists.
        done: int32 ``(num_envs,)`` done flags; its length is the number of envs.
        timestep: int32 ``(num_envs,)``.
        pool_counters: uint32 (or int32) ``(num_envs,)`` reset counters.
        seed: Philox key word 0.
        force_reset: Nonzero: reset every env.
        undo_done: Nonzero: clear ``done`` and ``timestep`` of reset envs.
        start_state: An env's start-state hook (twin of the rendered
            ``Cuda<Name>ResetWithStartState`` kernel): called after the copies with the reset rows
            (indices into this block of envs) and their :class:`~warp_drive.vocab.start_state.StartKey`.
    """
    done_w = word_view(done, np.int32)
    num_envs = done_w.size
    envs = np.arange(num_envs) if force_reset else np.flatnonzero(done_w > 0)
    if envs.size == 0:
        return
    calls = word_view(pool_counters, np.uint32)[:num_envs]
    pool_bits = philox_words(seed, POOL_STREAM, (envs + env_offset).astype(np.uint32), calls[envs])[:, 0]
    for k in range(num_entries):  # entry k's rows of the reset envs, copied as raw 32-bit words
        size, pool_size = int(sizes[k]), int(pool_sizes[k])
        if size <= 0:
            continue
        src_rows = pool_size if pool_size > 0 else num_envs
        rows = scale_bits_to_range(pool_bits, pool_size) if pool_size > 0 else envs
        row_view(dst[k], np.uint32, num_envs, size)[envs] = row_view(src[k], np.uint32, src_rows, size)[rows]
    if start_state is not None:
        start_state(envs, StartKey(int(seed) & 0xFFFFFFFF, (envs + env_offset).astype(np.uint32), calls[envs].copy()))
    calls[envs] += np.uint32(1)
    if undo_done:
        done_w[envs] = 0
        word_view(timestep, np.int32)[envs] = 0


#: Twin of the ``reset_when_done`` kernel: :func:`reset_env_rows` of a whole batch (envs from 0).
reset_when_done = functools.partial(reset_env_rows, 0)


def undo_done_flag_and_reset_timestep(
    done: np.ndarray, timestep: np.ndarray, force_reset: int
) -> None:
    """Clears ``done[e]`` and ``timestep[e]`` where forced or ``done[e] > 0`` (twin of the kernel, ``reset.cuh``).

    Args:
        done: int32 ``(num_envs,)``.
        timestep: int32 ``(num_envs,)``.
        force_reset: Nonzero: clear every env.
    """
    done_w = word_view(done, np.int32)
    ts = word_view(timestep, np.int32)
    mask = slice(None) if force_reset else done_w > 0
    ts[: done_w.size][mask] = 0
    done_w[mask] = 0
