"""The NumPy kernel twins on a block of rows (envs) of a batch give that block what the whole batch
gives it: the draws are keyed by the row's (env's) index in the whole batch, not in the block.
(The cpu rollout in env parts, ``warp_drive/training/engine/cpu_pipeline.py``, relies on it.)"""

from __future__ import annotations

import numpy as np
import pytest

from warp_drive.managers import cpu_kernels as ck

BLOCKS = [(0, 10), (10, 11), (11, 37)]  # uneven, one of a single row


def _probs(rows: int, n: int) -> np.ndarray:
    p = np.random.default_rng(1).random((rows, n)).astype(np.float32) ** 3
    return (p / p.sum(1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("argmax", [0, 1])
def test_categorical_blocks_draw_what_the_whole_batch_draws(argmax):
    rows, n, heads = 37, 6, 2
    p = _probs(rows, n)
    out = {}
    for how in ("whole", "blocks"):
        actions = np.full((rows, heads), -1, np.int32)
        counters = np.arange(rows, dtype=np.uint32) * np.uint32(3)
        log_probs = np.full(rows, 0.5, np.float32)
        flag = np.zeros(1, np.int32)
        if how == "whole":
            ck.sample_actions(p, actions, counters, flag, log_probs, rows, n, heads, 1, 7, 99, argmax, 2)
        else:
            for lo, hi in BLOCKS:
                ck.sample_action_rows(lo, p[lo:hi], actions[lo:hi], counters[lo:hi], flag, log_probs[lo:hi], hi - lo,
                                      n, heads, 1, 7, 99, argmax, 2)
        out[how] = (actions, counters, log_probs, flag)
    for a, b in zip(out["whole"], out["blocks"]):
        np.testing.assert_array_equal(a, b)
    assert len(set(out["whole"][0][:, 1].tolist())) > 1  # real draws, not one value


def test_gaussian_blocks_draw_what_the_whole_batch_draws():
    rows, dim = 37, 3
    rng = np.random.default_rng(2)
    mean = rng.normal(size=(rows, dim)).astype(np.float32)
    std = rng.random((rows, dim)).astype(np.float32) + np.float32(0.1)
    out = {}
    for how in ("whole", "blocks"):
        actions = np.zeros((rows, dim), np.float32)
        counters = np.arange(rows, dtype=np.uint32)
        log_probs = np.zeros(rows, np.float32)
        flag = np.zeros(1, np.int32)
        if how == "whole":
            ck.sample_gaussian_actions(mean, std, actions, counters, flag, log_probs, rows, dim, 5, 6, 0, 1)
        else:
            for lo, hi in BLOCKS:
                ck.sample_gaussian_action_rows(lo, mean[lo:hi], std[lo:hi], actions[lo:hi], counters[lo:hi], flag,
                                               log_probs[lo:hi], hi - lo, dim, 5, 6, 0, 1)
        out[how] = (actions, counters, log_probs)
    for a, b in zip(out["whole"], out["blocks"]):
        np.testing.assert_array_equal(a, b)


def test_reset_blocks_draw_the_pool_rows_the_whole_batch_draws():
    envs, slots, pool_rows = 37, 4, 9
    pool = np.arange(pool_rows * slots, dtype=np.float32).reshape(pool_rows, slots)
    saved = np.random.default_rng(3).random((envs, 2)).astype(np.float32)
    done0 = (np.random.default_rng(4).random(envs) < 0.5).astype(np.int32)
    out = {}
    for how in ("whole", "blocks"):
        live_pool = np.full((envs, slots), -1, np.float32)
        live_saved = np.full((envs, 2), -1, np.float32)
        done, timestep = done0.copy(), np.full(envs, 5, np.int32)
        counters = np.arange(envs, dtype=np.uint32)
        if how == "whole":
            ck.reset_when_done([live_pool, live_saved], [pool, saved], [slots, 2], [pool_rows, 0], 2, done, timestep,
                               counters, 21, 0, 1)
        else:
            for lo, hi in BLOCKS:
                ck.reset_env_rows(lo, [live_pool[lo:hi], live_saved[lo:hi]], [pool, saved[lo:hi]], [slots, 2],
                                  [pool_rows, 0], 2, done[lo:hi], timestep[lo:hi], counters[lo:hi], 21, 0, 1)
        out[how] = (live_pool, live_saved, done, timestep, counters)
    for a, b in zip(out["whole"], out["blocks"]):
        np.testing.assert_array_equal(a, b)
    drawn = out["whole"][0][done0 > 0, 0]
    assert len(set(drawn.tolist())) > 1  # pool rows drawn per env
