"""The NumPy categorical sampler (cpu backend) against a column-by-column twin of the CUDA kernel.

The reference below is the kernel's algorithm written one action column at a time, as the device
runs it (float32 running sums left to right, first running sum above ``u * total``, fallback to
the last positive probability); the vectorised ``sample_actions`` must give the same actions,
counters, error bits and log-probabilities, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from warp_drive.managers import cpu_kernels as ck
from warp_drive.utils.philox import philox_words, uniform_from_bits


def reference_sample(p, counters, seed, stream, log_probs, stride, offset, actions, mode):
    rows, n = p.shape
    total = np.zeros(rows, np.float32)
    for i in range(n):
        total = total + p[:, i]
    bits = 0
    with np.errstate(invalid="ignore"):
        if np.any(~(p >= np.float32(0))):
            bits |= ck.ERROR_BAD_VALUE
        if np.any(np.abs(total - np.float32(1)) > ck.PROB_SUM_TOLERANCE):
            bits |= ck.ERROR_BAD_SUM
    u = uniform_from_bits(philox_words(seed, stream, np.arange(rows, dtype=np.uint32), counters)[:, 0])
    x = u * total
    running = np.zeros(rows, np.float32)
    action = np.zeros(rows, np.int32)
    found = np.zeros(rows, bool)
    last_positive = np.zeros(rows, np.int32)
    for i in range(n):
        running = running + p[:, i]
        hit = ~found & (running > x)
        action[hit] = i
        found |= hit
        last_positive[p[:, i] > np.float32(0)] = i
    chosen = np.where(found, action, last_positive)
    counters += np.uint32(1)
    actions.reshape(-1)[np.arange(rows) * stride + offset] = chosen
    # fmaxf (the kernel's) returns the other operand for a NaN: np.fmax, not np.maximum
    lp = np.log(np.fmax(p[np.arange(rows), chosen], np.finfo(np.float32).tiny)).astype(np.float32)
    log_probs[...] = log_probs + lp if mode == 2 else lp
    return bits


def _probs(rng, rows, n, case):
    p = np.exp(rng.normal(size=(rows, n)) * 3).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    p = p.astype(np.float32)
    if case == "zeros":
        p[rng.random((rows, n)) < 0.4] = 0
        p[:3] = 0
    elif case == "short":  # rows summing to a bit less than 1: some draws pass every running sum
        p *= np.float32(0.9995)
        p[:, -1] = 0
    elif case == "bad":
        p[0, 0] = np.nan
        p[1, -1] = -0.25
    return p


@pytest.mark.parametrize("rows, n", [(1000, 21), (37, 1), (64, 3), (200, 100)])
@pytest.mark.parametrize("case", ["softmax", "zeros", "short", "bad"])
@pytest.mark.parametrize("mode", [1, 2])
def test_sample_actions_matches_the_column_loop_twin(rows, n, case, mode):
    rng = np.random.default_rng(rows * n)
    p = _probs(rng, rows, n, case)
    start = (np.arange(rows, dtype=np.uint32) * np.uint32(2654435761)).astype(np.uint32)
    out = []
    for impl in ("fast", "reference"):
        actions = np.full((rows, 3), -7, np.int32)
        counters = start.copy()
        log_probs = np.full(rows, 0.25, np.float32)
        error = np.zeros(1, np.int32)
        if impl == "fast":
            ck.sample_actions(p, actions, counters, error, log_probs, rows, n, 3, 1, 4242, 17, 0, mode)
            bits = int(error[0])
        else:
            bits = reference_sample(p, counters, 4242, 17, log_probs, 3, 1, actions, mode)
        out.append((actions, counters, bits, log_probs))
    (a, c, b, lp), (ra, rc, rb, rlp) = out
    np.testing.assert_array_equal(a, ra)  # column 1 sampled, columns 0 and 2 untouched
    np.testing.assert_array_equal(c, rc)
    assert b == rb
    np.testing.assert_array_equal(lp.view(np.int32), rlp.view(np.int32))
