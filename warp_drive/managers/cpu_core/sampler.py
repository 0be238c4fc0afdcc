"""NumPy twins of the action samplers of ``sampler.cuh``: categorical (one head, or every head of
a placeholder in one call) and diagonal Gaussian.

Bit-identical to the CUDA kernels for categorical sampling (same Philox draws, same float32 sums
without FMA); Gaussian samples agree within the float32 rounding of the device's transcendental
functions. Work is vectorised over rows; loops run only over action indices. The ``*_rows``
functions sample a block of a batch's rows exactly as the whole batch would (the CPU rollout's env
parts); the kernel-named twins are those functions from row 0.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np

from warp_drive.errors import DataShapeError
from warp_drive.managers.cpu_core.words import row_ids, row_view, word_view
from warp_drive.utils.philox import box_muller, philox_words, uniform_from_bits

logger = logging.getLogger(__name__)

__all__ = [
    "ERROR_BAD_INDEX",
    "ERROR_BAD_SUM",
    "ERROR_BAD_VALUE",
    "MAX_SAMPLE_HEADS",
    "PROB_SUM_TOLERANCE",
    "sample_action_heads",
    "sample_action_rows",
    "sample_actions",
    "sample_gaussian_action_rows",
    "sample_gaussian_actions",
]

#: Error bit: NaN / negative probability, NaN mean or std, or std < 0 (WK_ERROR_BAD_VALUE).
ERROR_BAD_VALUE = 1
#: Error bit: ``|sum(probs) - 1| > PROB_SUM_TOLERANCE`` (WK_ERROR_BAD_SUM).
ERROR_BAD_SUM = 2
#: Error bit: an agent index outside the joint placeholder, that row not written (WK_ERROR_BAD_INDEX).
ERROR_BAD_INDEX = 4
#: Tolerance on a probability row's float32 sum (WK_PROB_SUM_TOLERANCE).
PROB_SUM_TOLERANCE = np.float32(1e-3)
#: Most categorical heads one ``sample_action_heads`` call takes (WK_MAX_SAMPLE_HEADS).
MAX_SAMPLE_HEADS = 4
_FLT_TINY = np.finfo(np.float32).tiny  # WK_FLT_TINY
_HALF_LOG_2PI = 0.9189385332046727  # WK_HALF_LOG_2PI


def _or_error_flag(error_flag: Any, bits: int) -> None:
    """``atomicOr(error_flag, bits)`` twin."""
    if bits:
        word_view(error_flag, np.int32)[0] |= np.int32(bits)
        logger.debug("core kernel raised error bits %d", bits)


def _categorical_errors(p: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """Pass 1 of the categorical sampler on ``(rows, actions)`` float32 ``p``: ``(total, bits,
    running)``, the per-row sums (left to right, as on the device), the ORed error bits, and the
    column-major ``(actions, rows)`` running sums (``total`` is their last row; pass 2 reuses them)."""
    # running[i] = running[i - 1] + p[:, i] over every row at once, in float32: the device's order, exactly
    # (np.cumsum along either axis loops per row here: several times slower)
    rows, n = p.shape
    running = np.empty((n, rows), dtype=np.float32)
    if n:
        np.copyto(running[0], p[:, 0])
    for i in range(1, n):
        np.add(running[i - 1], p[:, i], out=running[i])
    total = running[-1] if n else np.zeros(rows, dtype=np.float32)
    bits = 0
    with np.errstate(invalid="ignore", over="ignore"):
        if not (p >= np.float32(0.0)).all():  # NaN or negative
            bits |= ERROR_BAD_VALUE
        if np.any(np.abs(total - np.float32(1.0)) > PROB_SUM_TOLERANCE):
            bits |= ERROR_BAD_SUM
    return total, bits, running


def _argmax_rows(p: np.ndarray) -> np.ndarray:
    """First index of each row's maximum with the device's strict ``>`` scan."""
    index = np.zeros(p.shape[0], dtype=np.int32)
    if p.shape[1] == 0:
        return index
    best = p[:, 0].copy()
    for i in range(1, p.shape[1]):
        better = p[:, i] > best
        best = np.where(better, p[:, i], best)
        index[better] = i
    return index


def _inverse_cdf(p: np.ndarray, total: np.ndarray, u: np.ndarray, running: np.ndarray, monotone: bool) -> np.ndarray:
    """Pass 2 of the categorical sampler (twin of ``wkSampleCategoricalRow``): per row, the first
    ``i`` whose running sum (pass 1's) exceeds ``u * total``, else the last ``i`` with ``p[i] > 0``,
    else 0 (int32). ``monotone``: pass 1 found no error, so the running sums never decrease."""
    rows, n = p.shape
    if n == 0:
        return np.zeros(rows, dtype=np.int32)
    x = u * total  # float32 multiply, round to nearest
    if monotone:
        # the running sums passed are a prefix: the first hit is the count of those <= x (n: none)
        action = np.add.reduce(running <= x, axis=0, dtype=np.int32)
        missed = action == n
    else:
        hit = running > x
        action = hit.argmax(axis=0).astype(np.int32)  # first hit (0 when none)
        missed = ~hit[action, np.arange(rows)]
    if missed.any():  # no running sum passed x (rounding, NaN): last positive probability, else 0
        positive = p[missed] > np.float32(0.0)
        last = (n - 1 - positive[:, ::-1].argmax(axis=1)).astype(np.int32)
        action[missed] = np.where(positive.any(axis=1), last, np.int32(0))
    return action


def _categorical_head(p: np.ndarray, counters: Any, rows: np.ndarray, seed: int, stream_id: int,
                      use_argmax: int) -> tuple[np.ndarray, int]:
    """One categorical head of a block of rows (twin of ``wkSampleCategoricalRow`` per row):
    ``(chosen int32 actions, ORed error bits)``. Row ``r`` draws from Philox(key=(seed, stream_id),
    ctr=(rows[r], counters[r], 0, 0)) and advances its counter, unless ``use_argmax``."""
    total, bits, running = _categorical_errors(p)
    if use_argmax:
        return _argmax_rows(p), bits
    calls = word_view(counters, np.uint32)[: p.shape[0]]
    words = philox_words(seed, stream_id, rows, calls)
    chosen = _inverse_cdf(p, total, uniform_from_bits(words[:, 0]), running, monotone=not bits)
    calls += np.uint32(1)
    return chosen, bits


def _log_prob_of(p: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """float32 ``log(fmaxf(p[r, chosen[r]], FLT_TINY))`` per row (the kernels' log-probability;
    like C's ``fmaxf``, ``np.fmax`` takes FLT_TINY for a NaN probability, which argmax can pick)."""
    picked = np.take_along_axis(p, chosen[:, None].astype(np.intp), axis=1)[:, 0]
    return np.log(np.fmax(picked, np.float32(_FLT_TINY))).astype(np.float32)


def sample_action_rows(
    row_offset: int,
    probs: np.ndarray,
    actions: np.ndarray,
    counters: np.ndarray,
    error_flag: np.ndarray,
    log_probs: np.ndarray | None,
    num_rows: int,
    num_actions: int,
    action_stride: int,
    action_offset: int,
    seed: int,
    stream_id: int,
    use_argmax: int,
    log_prob_mode: int = 0,
) -> None:
    """Categorical sampling of rows ``row_offset .. row_offset + num_rows - 1`` of a batch.

    Row ``r`` draws ``u`` from Philox(key=(seed, stream_id), ctr=(r, counters[r], 0, 0)) word 0 and writes
    ``actions[r * action_stride + action_offset]``.

    Args:
        row_offset: Index of the first row in the whole batch (counter word 0 of its draw); every
            array argument starts at that row, so a block of rows draws what the whole batch would.
        probs: ``(num_rows, num_actions)`` float32 probabilities (any shape, flat order).
        actions: int32 action buffer, ``num_rows * action_stride`` words.
        counters: uint32 (or int32) per-row call counters, advanced by one unless argmax.
        error_flag: int32 word; bit 1 = NaN / negative prob, bit 2 = sum off by > 1e-3.
        num_rows: Number of rows (envs x agents).
        num_actions: Actions in this head.
        action_stride: Words between consecutive rows in ``actions`` (number of heads).
        action_offset: This head's column in ``actions``.
        seed: Philox key word 0.
        stream_id: Philox key word 1 (one stream per action head).
        use_argmax: Nonzero: take the first maximum, draw nothing.
        log_probs: float32 (num_rows,) or None; receives log p(a) (mode 1) or adds it (mode 2).
        log_prob_mode: 0 none, 1 write, 2 accumulate (joint log-probability over heads).
    """
    p = row_view(probs, np.float32, num_rows, num_actions)
    out = word_view(actions, np.int32)
    chosen, bits = _categorical_head(p, counters, row_ids(row_offset, num_rows), seed, stream_id, use_argmax)
    out[: num_rows * action_stride].reshape(num_rows, action_stride)[:, action_offset] = chosen
    if log_prob_mode:
        lp = _log_prob_of(p, chosen)
        dst = word_view(log_probs, np.float32)[:num_rows]
        dst[...] = dst + lp if log_prob_mode == 2 else lp
    _or_error_flag(error_flag, bits)


#: Twin of the ``sample_actions`` kernel: :func:`sample_action_rows` of a whole batch (rows from 0).
sample_actions = functools.partial(sample_action_rows, 0)


def sample_action_heads(
    probs_0: np.ndarray,
    probs_1: np.ndarray | None,
    probs_2: np.ndarray | None,
    probs_3: np.ndarray | None,
    counters_0: np.ndarray | None,
    counters_1: np.ndarray | None,
    counters_2: np.ndarray | None,
    counters_3: np.ndarray | None,
    num_actions_0: int,
    num_actions_1: int,
    num_actions_2: int,
    num_actions_3: int,
    stream_id_0: int,
    stream_id_1: int,
    stream_id_2: int,
    stream_id_3: int,
    actions: np.ndarray,
    error_flag: np.ndarray,
    log_probs: np.ndarray | None,
    joint_actions: np.ndarray | None,
    agent_index: np.ndarray | None,
    num_rows: int,
    num_heads: int,
    num_agents: int,
    num_joint_agents: int,
    seed: int,
    use_argmax: int,
) -> None:
    """Every categorical head of an action placeholder at once; twin of the ``sample_action_heads``
    kernel (``sampler.cuh``).

    Gives bit for bit what ``num_heads`` calls of :data:`sample_actions` (head ``h``: ``probs_h``,
    ``counters_h``, ``num_actions_h``, ``stream_id_h``, column ``h`` of ``num_heads``; log-prob
    mode 1 for head 0, 2 after it) followed by an ``index_copy_`` of the actions into the joint
    placeholder give.

    Args:
        probs_0 .. probs_3: ``(num_rows, num_actions_h)`` float32 per head (heads from
            ``num_heads`` on: None, unused).
        counters_0 .. counters_3: uint32 (or int32) per-row call counters of each head, advanced by
            one unless argmax.
        num_actions_0 .. num_actions_3: Actions in each head.
        stream_id_0 .. stream_id_3: Philox key word 1 of each head.
        actions: int32 ``(num_rows, num_heads)`` output.
        error_flag: int32 word, ORed with the ``ERROR_*`` bits (:data:`ERROR_BAD_INDEX`: that row not written).
        log_probs: float32 ``(num_rows,)`` receiving the joint log-probability (float32 sum over
            the heads in order), or None.
        joint_actions: int32 ``(num_envs, num_joint_agents, num_heads)`` joint placeholder, or
            None; row ``r = env * num_agents + a`` also goes to its row
            ``env * num_joint_agents + agent_index[a]``.
        agent_index: int64 ``(num_agents,)`` the rows' agents among all (with ``joint_actions``).
        num_rows: Number of rows (envs x the policy's agents).
        num_heads: Heads sampled, 1 to :data:`MAX_SAMPLE_HEADS`.
        num_agents: The policy's agents per env.
        num_joint_agents: Agents per env of the joint placeholder.
        seed: Philox key word 0.
        use_argmax: Nonzero: take the first maximum, draw nothing.

    Raises:
        DataShapeError: ``num_heads`` outside 1 .. :data:`MAX_SAMPLE_HEADS`.
    """
    if not 1 <= num_heads <= MAX_SAMPLE_HEADS:
        raise DataShapeError(f"num_heads={num_heads}; sample_action_heads takes 1 to {MAX_SAMPLE_HEADS} heads")
    probs = (probs_0, probs_1, probs_2, probs_3)
    counters = (counters_0, counters_1, counters_2, counters_3)
    sizes = (num_actions_0, num_actions_1, num_actions_2, num_actions_3)
    streams = (stream_id_0, stream_id_1, stream_id_2, stream_id_3)
    for h in range(num_heads):  # head 0 writes the joint log-probability, the others add theirs
        sample_action_rows(0, probs[h], actions, counters[h], error_flag, log_probs, num_rows, sizes[h], num_heads,
                           h, seed, streams[h], use_argmax, 0 if log_probs is None else 1 + (h > 0))
    if joint_actions is not None:
        out = row_view(actions, np.int32, num_rows, num_heads)
        env, agent = np.divmod(np.arange(num_rows, dtype=np.int64), num_agents)
        index = np.asarray(agent_index).reshape(-1)[:num_agents].astype(np.int64, copy=False)[agent]
        ok = (index >= 0) & (index < num_joint_agents)  # out-of-range agents are flagged, not written
        word_view(joint_actions, np.int32).reshape(-1, num_heads)[(env * num_joint_agents + index)[ok]] = out[ok]
        _or_error_flag(error_flag, 0 if ok.all() else ERROR_BAD_INDEX)


def sample_gaussian_action_rows(
    row_offset: int,
    mean: np.ndarray,
    std: np.ndarray,
    actions: np.ndarray,
    counters: np.ndarray,
    error_flag: np.ndarray,
    log_probs: np.ndarray | None,
    num_rows: int,
    action_dim: int,
    seed: int,
    stream_id: int,
    deterministic: int,
    log_prob_mode: int = 0,
) -> None:
    """Diagonal Gaussian sampling of rows ``row_offset ..`` of a batch (as :func:`sample_action_rows`).

    ``actions[r, j] = mean[r, j] + std[r, j] * z_j`` in float32, where dims
    ``2k, 2k+1`` take Box-Muller normals from words 0, 1 of
    Philox(key=(seed, stream_id), ctr=(r, counters[r], k, 0)).

    Args:
        row_offset: Index of the first row in the whole batch (counter word 0 of its draws).
        mean, std: ``(num_rows, action_dim)`` float32.
        actions: ``(num_rows, action_dim)`` float32 output.
        counters: uint32 (or int32) per-row call counters, advanced by one unless deterministic.
        error_flag: int32 word; bit 1 = NaN mean or std, or std < 0.
        num_rows: Number of rows.
        action_dim: Action dimensions per row.
        seed: Philox key word 0.
        stream_id: Philox key word 1.
        deterministic: Nonzero: write the mean, draw nothing.
    """
    m = row_view(mean, np.float32, num_rows, action_dim)
    s = row_view(std, np.float32, num_rows, action_dim)
    out = row_view(actions, np.float32, num_rows, action_dim)
    bits = ERROR_BAD_VALUE if np.any(np.isnan(m) | ~(s >= np.float32(0.0))) else 0
    if deterministic:
        out[...] = m
    else:
        calls = word_view(counters, np.uint32)[:num_rows]
        blocks = (action_dim + 1) // 2
        words = philox_words(
            seed,
            stream_id,
            row_ids(row_offset, num_rows)[:, None],
            calls[:, None],
            np.arange(blocks, dtype=np.uint32)[None, :],
        )  # (rows, blocks, 4)
        z0, z1 = box_muller(words[..., 0], words[..., 1])
        z = np.stack([z0, z1], axis=-1).reshape(num_rows, 2 * blocks)[:, :action_dim]
        with np.errstate(invalid="ignore", over="ignore"):
            out[...] = m + s * z  # float32, no FMA (as __fadd_rn(m, __fmul_rn(s, z)))
        calls += np.uint32(1)
    if log_prob_mode:
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (out - m) / s
            lp = (np.float32(-0.5) * z * z - np.log(s) - np.float32(_HALF_LOG_2PI)).sum(axis=1, dtype=np.float32)
        word_view(log_probs, np.float32)[:num_rows] = lp
    _or_error_flag(error_flag, bits)


#: Twin of the ``sample_gaussian_actions`` kernel: :func:`sample_gaussian_action_rows` from row 0.
sample_gaussian_actions = functools.partial(sample_gaussian_action_rows, 0)
