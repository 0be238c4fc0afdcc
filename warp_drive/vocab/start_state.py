"""Fresh start states drawn on the device: the env contract's start-state hook.

By default (2.7.1's semantics) a reset restores every env replica from the one start state that
the host ``reset()`` drew, so all replicas and all episodes start alike. An env that defines a
start-state hook can instead give every replica and every episode its own start state, drawn
inside the one-launch reset with no host round trip:

* CUDA: ``__device__ void <Name>StartState(WkStartKey start, <arrays and scalars>)`` in the env's
  ``.cu`` file, called by every thread of the env's block in the reset kernel the compiler appends
  (:mod:`warp_drive.cuda.start_state_kernel`). Draws come from ``wkStartWords(start, slot)``
  (``warp_drive/cuda/core/start_state.cuh``).
* NumPy twin: ``numpy_start_state(self, data, rows, key)`` writes rows ``rows`` of the arrays in
  ``data`` (the store's host views, or a block of envs of them) from :meth:`StartKey.words`, which
  gives the same bits as the kernel, so the cpu backend draws the GPU's start states exactly.
* ``start_state_args`` on the class: the hook's arguments after ``start``, bound by name like
  ``step_kernel_args``.

The key of a draw is (seed, env, episode): seed is the reset seed (the env's ``seed``), episode is
the env's reset count, so a run is reproducible and no two episodes share a start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from warp_drive.utils.philox import philox_words, uniform_from_bits

#: Philox stream (key word 1) of the start-state draws, "strt" in ASCII (``WK_START_STREAM``).
START_STREAM = 0x73747274
@dataclass(frozen=True)
class StartKey:
    """Keys of the start states drawn at one reset, for ``n`` envs (NumPy twin of ``WkStartKey``).

    Attributes:
        seed: reset seed (Philox key word 0).
        env: ``(n,)`` uint32 env indices in the whole batch.
        episode: ``(n,)`` uint32 reset counts of those envs before this reset.
    """

    seed: int
    env: np.ndarray
    episode: np.ndarray

    def words(self, slot: int | np.ndarray) -> np.ndarray:
        """The four random words of ``slot`` (``wkStartWords``): ``(n, 4)`` for a scalar slot,
        ``(n, S, 4)`` for ``S`` slots."""
        slot = np.asarray(slot, dtype=np.uint32)
        if slot.ndim == 0:
            return philox_words(self.seed, START_STREAM, self.env, self.episode, slot)
        return philox_words(self.seed, START_STREAM, self.env[:, None], self.episode[:, None], slot[None, :])


def uniform_in(word: np.ndarray, low: float | np.ndarray, high: float | np.ndarray) -> np.ndarray:
    """``low + u * (high - low)`` in float32, ``u`` from the word's top 24 bits (``wkStartUniform``)."""
    low32 = np.asarray(low, dtype=np.float32)
    span = np.asarray(high, dtype=np.float32) - low32
    return (low32 + uniform_from_bits(word) * span).astype(np.float32)
