"""Tests of the NumPy core kernels (warp_drive.managers.cpu_kernels)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from warp_drive.managers import cpu_kernels as ck
from warp_drive.utils.philox import box_muller, philox_words, scale_bits_to_range, uniform_from_bits

CORE_DIR = Path(__file__).resolve().parents[2] / "warp_drive" / "cuda" / "core"


# --------------------------------------------------------------------------- helpers


def _sample(
    probs: np.ndarray,
    counters: np.ndarray | None = None,
    seed: int = 1,
    stream: int = 0,
    argmax: int = 0,
    stride: int = 1,
    offset: int = 0,
    flag: np.ndarray | None = None,
) -> tuple[np.ndarray, int, np.ndarray]:
    """Runs sample_actions on a (rows, actions) array; returns (actions column, flag, counters)."""
    probs = np.ascontiguousarray(probs, dtype=np.float32)
    rows, num_actions = probs.shape
    counters = np.zeros(rows, np.uint32) if counters is None else counters
    flag = np.zeros(1, np.int32) if flag is None else flag
    actions = np.full((rows, stride), -1, np.int32)
    ck.sample_actions(
        probs, actions, counters, flag, None, rows, num_actions, stride, offset, seed, stream, argmax
    )
    return actions[:, offset], int(flag[0]), counters


def _binomial_tolerance(p: np.ndarray, n: int, sigmas: float = 5.0) -> np.ndarray:
    """Tolerance on an empirical frequency: ``sigmas`` binomial standard errors (+1e-4 floor)."""
    return sigmas * np.sqrt(p * (1 - p) / n) + 1e-4


# --------------------------------------------------------------------------- contract


def _cuda_kernel_params() -> dict[str, list[str]]:
    """Parameter names of every extern "C" __global__ kernel in the core headers."""
    kernels = {}
    pattern = re.compile(r'extern "C" __global__ void (\w+)\((.*?)\)\s*\{', re.S)
    for header in CORE_DIR.glob("*.cuh"):
        for name, params in pattern.findall(header.read_text()):
            kernels[name] = [re.split(r"[\s*]+", p.strip())[-1] for p in params.split(",") if p.strip()]
    return kernels


def test_core_kernels_match_cuda_names_and_argument_order() -> None:
    cuda = _cuda_kernel_params()
    assert set(ck.CORE_KERNELS) == set(cuda)
    for name, fn in ck.CORE_KERNELS.items():
        params = inspect.signature(fn).parameters.values()  # keyword-only: the twin's own extras
        assert [p.name for p in params if p.kind != p.KEYWORD_ONLY] == cuda[name], name


# --------------------------------------------------------------------------- categorical


def test_categorical_frequencies_and_zero_probabilities() -> None:
    p = np.array([0.1, 0.0, 0.25, 0.05, 0.6, 0.0], dtype=np.float32)
    n = 200_000
    actions, flag, _ = _sample(np.tile(p, (n, 1)), seed=123, stream=4)
    freq = np.bincount(actions, minlength=len(p)) / n
    # 5 binomial standard errors: <= 0.0056 for every action.
    assert np.all(np.abs(freq - p) <= _binomial_tolerance(p, n))
    assert freq[1] == 0 and freq[5] == 0
    assert flag == 0


def test_categorical_frequencies_over_repeated_calls() -> None:
    """One row sampled 1e5 times through its call counter follows the distribution."""
    p = np.array([0.5, 0.3, 0.0, 0.2], dtype=np.float32)
    rows, calls = 100, 1000
    probs = np.tile(p, (rows, 1))
    counters = np.zeros(rows, np.uint32)
    drawn = np.empty((calls, rows), np.int32)
    for c in range(calls):
        drawn[c], _, _ = _sample(probs, counters, seed=5, stream=2)
    assert np.all(counters == calls)
    freq = np.bincount(drawn.ravel(), minlength=4) / drawn.size
    assert np.all(np.abs(freq - p) <= _binomial_tolerance(p, drawn.size))
    # Each row on its own over time (1000 draws, 5 sigma).
    row_freq = (drawn == 0).mean(axis=0)
    assert np.all(np.abs(row_freq - 0.5) <= 5 * np.sqrt(0.25 / calls))


def test_unnormalised_rows_sample_proportionally_and_flag() -> None:
    p = np.array([2.0, 6.0], dtype=np.float32)  # sum 8 -> bit 2, still proportional
    n = 100_000
    actions, flag, _ = _sample(np.tile(p, (n, 1)), seed=8)
    assert flag == ck.ERROR_BAD_SUM
    assert abs(actions.mean() - 0.75) <= _binomial_tolerance(np.float32(0.75), n)


def test_degenerate_rows() -> None:
    probs = np.array(
        [
            [0.0, 0.0, 0.0],  # all zero -> 0, bad sum
            [0.0, 1.0, 0.0],  # one-hot -> 1
            [0.0, 0.0, 1.0],  # one-hot last -> 2
            [0.0, 0.0, 0.0],
        ],
        dtype=np.float32,
    )
    for seed in range(20):
        actions, _, _ = _sample(probs, seed=seed)
        assert actions.tolist() == [0, 1, 2, 0]
    actions, flag, _ = _sample(probs[1:3], seed=3)
    assert flag == 0
    _, flag, _ = _sample(probs[:1])
    assert flag == ck.ERROR_BAD_SUM


def test_single_action_and_tiny_mass() -> None:
    actions, flag, _ = _sample(np.ones((50, 1), np.float32))
    assert np.all(actions == 0) and flag == 0
    tiny = np.zeros((1000, 4), np.float32)
    tiny[:, 3] = 1e-30  # only positive entry; x = u * total may equal total: fallback
    actions, flag, _ = _sample(tiny)
    assert np.all(actions == 3) and flag == ck.ERROR_BAD_SUM


def test_error_flag_bits() -> None:
    good = np.array([[0.5, 0.5]], np.float32)
    assert _sample(good)[1] == 0
    # A NaN total fails every comparison, so NaN rows raise bit 1 only.
    assert _sample(np.array([[np.nan, 0.5]], np.float32))[1] == ck.ERROR_BAD_VALUE
    assert _sample(np.array([[-0.25, 1.25]], np.float32))[1] == ck.ERROR_BAD_VALUE
    assert _sample(np.array([[0.5, 0.5011]], np.float32))[1] == ck.ERROR_BAD_SUM
    assert _sample(np.array([[0.5, 0.5009]], np.float32))[1] == 0  # within 1e-3
    assert _sample(np.array([[np.inf, 0.0]], np.float32))[1] == ck.ERROR_BAD_SUM
    # Bits are ORed into the existing flag, also in argmax mode.
    flag = np.array([4], np.int32)
    _sample(np.array([[-1.0, 0.5]], np.float32), flag=flag, argmax=1)
    assert flag[0] == 4 | ck.ERROR_BAD_VALUE | ck.ERROR_BAD_SUM


def test_nan_row_falls_back_to_last_positive() -> None:
    probs = np.tile(np.array([0.3, np.nan, 0.4, 0.3, 0.0], np.float32), (1000, 1))
    actions, flag, _ = _sample(probs, seed=2)
    # Running sums become NaN after index 1: draws land on 0 or fall back to 3.
    assert set(np.unique(actions)) <= {0, 3}
    assert flag & ck.ERROR_BAD_VALUE


def test_argmax_first_maximum_and_counters_untouched() -> None:
    probs = np.array([[0.1, 0.4, 0.4, 0.1], [0.7, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, 1.0]], np.float32)
    counters = np.array([5, 6, 7], np.uint32)
    actions, flag, counters = _sample(probs, counters, argmax=1)
    assert actions.tolist() == [1, 0, 3]
    assert counters.tolist() == [5, 6, 7]
    assert flag == 0


def test_counters_advance_and_draws_change() -> None:
    probs = np.full((1000, 10), 0.1, np.float32)
    counters = np.zeros(1000, np.uint32)
    first, _, _ = _sample(probs, counters, seed=4)
    assert np.all(counters == 1)
    second, _, _ = _sample(probs, counters, seed=4)
    assert np.all(counters == 2)
    assert np.mean(first == second) < 0.2  # ~0.1 expected
    # Counters wrap modulo 2**32; int32 counter storage is accepted (same words).
    wrap = np.full(1000, 0xFFFFFFFF, np.uint32)
    _sample(probs, wrap)
    assert np.all(wrap == 0)
    as_int = np.zeros(1000, np.int32)
    third, _, _ = _sample(probs, as_int, seed=4)
    np.testing.assert_array_equal(third, first)
    assert np.all(as_int == 1)


def test_same_seed_same_actions_and_exact_draws() -> None:
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(6), size=5000).astype(np.float32)
    start = rng.integers(0, 2**32, size=5000, dtype=np.uint64).astype(np.uint32)
    a, _, _ = _sample(probs, start.copy(), seed=77, stream=3)
    b, _, _ = _sample(probs, start.copy(), seed=77, stream=3)
    c, _, _ = _sample(probs, start.copy(), seed=78, stream=3)
    d, _, _ = _sample(probs, start.copy(), seed=77, stream=4)
    np.testing.assert_array_equal(a, b)
    assert np.mean(a != c) > 0.3 and np.mean(a != d) > 0.3
    # Reference: u from Philox(ctr=(r, counter, 0, 0), key=(seed, stream)) word 0,
    # first index whose float32 running sum exceeds float32(u * total).
    u = uniform_from_bits(philox_words(77, 3, np.arange(5000), start)[:, 0])
    cums = np.cumsum(probs, axis=1, dtype=np.float32)  # sequential float32 sums
    x = u * cums[:, -1]
    expected = np.argmax(cums > x[:, None], axis=1)
    np.testing.assert_array_equal(a, expected)


def test_action_stride_and_offset_write_only_their_column() -> None:
    probs = np.tile(np.array([0.0, 0.0, 1.0], np.float32), (8, 1))
    counters = np.zeros(8, np.uint32)
    flag = np.zeros(1, np.int32)
    actions = np.full((8, 3), -1, np.int32)
    ck.sample_actions(probs, actions, counters, flag, None, 8, 3, 3, 1, 0, 0, 0)
    assert np.all(actions[:, 1] == 2)
    assert np.all(actions[:, [0, 2]] == -1)


# --------------------------------------------------------------------------- gaussian


def _gauss(
    mean: np.ndarray,
    std: np.ndarray,
    counters: np.ndarray | None = None,
    seed: int = 3,
    stream: int = 1,
    det: int = 0,
) -> tuple[np.ndarray, int, np.ndarray]:
    """Runs sample_gaussian_actions; returns (actions, flag, counters)."""
    mean = np.ascontiguousarray(mean, np.float32)
    std = np.ascontiguousarray(std, np.float32)
    rows, dim = mean.shape
    counters = np.zeros(rows, np.uint32) if counters is None else counters
    flag = np.zeros(1, np.int32)
    out = np.zeros((rows, dim), np.float32)
    ck.sample_gaussian_actions(mean, std, out, counters, flag, None, rows, dim, seed, stream, det)
    return out, int(flag[0]), counters


def test_gaussian_mean_std_and_independence() -> None:
    n = 100_000
    mu = np.array([1.0, -2.0, 0.5], np.float32)
    sigma = np.array([0.5, 2.0, 1.0], np.float32)
    out, flag, counters = _gauss(np.tile(mu, (n, 1)), np.tile(sigma, (n, 1)))
    assert flag == 0 and np.all(counters == 1)
    # Mean within 5 standard errors, std within 2% (sd of the estimate ~0.22%).
    assert np.all(np.abs(out.mean(axis=0) - mu) < 5 * sigma / np.sqrt(n))
    assert np.all(np.abs(out.std(axis=0) / sigma - 1) < 0.02)
    z = (out - mu) / sigma
    assert abs(np.corrcoef(z[:, 0], z[:, 1])[0, 1]) < 0.02  # Box-Muller pair
    assert abs(np.corrcoef(z[:, 1], z[:, 2])[0, 1]) < 0.02  # across word blocks


def test_gaussian_matches_philox_layout() -> None:
    rows, dim = 7, 5
    counters = np.arange(rows, dtype=np.uint32) * 3
    mean = np.zeros((rows, dim), np.float32)
    std = np.ones((rows, dim), np.float32)
    out, _, _ = _gauss(mean, std, counters.copy(), seed=11, stream=6)
    for r in range(rows):
        for j in range(dim):
            words = philox_words(11, 6, r, counters[r], j // 2)
            z = box_muller(words[0], words[1])[j % 2]
            assert out[r, j] == z


def test_gaussian_deterministic_and_errors() -> None:
    mean = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    std = np.ones_like(mean)
    counters = np.array([9, 9], np.uint32)
    out, flag, counters = _gauss(mean, std, counters, det=1)
    np.testing.assert_array_equal(out, mean)
    assert counters.tolist() == [9, 9] and flag == 0
    for bad_mean, bad_std in [(np.nan, 1.0), (0.0, np.nan), (0.0, -1.0)]:
        _, flag, _ = _gauss(np.array([[bad_mean]], np.float32), np.array([[bad_std]], np.float32))
        assert flag == ck.ERROR_BAD_VALUE
    _, flag, _ = _gauss(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
    assert flag == 0  # std == 0 is allowed


# --------------------------------------------------------------------------- resets


def _reset_setup(num_envs: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Live and saved float32 (E, 3) and int32 (E, 2) arrays."""
    rng = np.random.default_rng(42)
    live_f = rng.normal(size=(num_envs, 3)).astype(np.float32)
    saved_f = rng.normal(size=(num_envs, 3)).astype(np.float32)
    live_i = rng.integers(-100, 100, size=(num_envs, 2), dtype=np.int32)
    saved_i = rng.integers(-100, 100, size=(num_envs, 2), dtype=np.int32)
    return live_f, saved_f, live_i, saved_i


def test_reset_restores_only_done_envs() -> None:
    live_f, saved_f, live_i, saved_i = _reset_setup()
    before_f, before_i = live_f.copy(), live_i.copy()
    done = np.array([0, 1, 0, 1, 0, 0], np.int32)
    timestep = np.array([5, 6, 7, 8, 9, 10], np.int32)
    pool_counters = np.zeros(6, np.uint32)
    ck.reset_when_done(
        [live_f, live_i], [saved_f, saved_i], [3, 2], [0, 0], 2,
        done, timestep, pool_counters, 0, 0, 1,
    )  # fmt: skip
    reset = np.array([1, 3])
    keep = np.array([0, 2, 4, 5])
    np.testing.assert_array_equal(live_f[reset], saved_f[reset])
    np.testing.assert_array_equal(live_i[reset], saved_i[reset])
    np.testing.assert_array_equal(live_f[keep], before_f[keep])
    np.testing.assert_array_equal(live_i[keep], before_i[keep])
    assert done.tolist() == [0] * 6
    assert timestep.tolist() == [5, 0, 7, 0, 9, 10]
    assert pool_counters.tolist() == [0, 1, 0, 1, 0, 0]


def test_reset_without_undo_keeps_flags_and_force_resets_all() -> None:
    live_f, saved_f, live_i, saved_i = _reset_setup()
    done = np.array([0, 1, 0, 0, 0, 0], np.int32)
    timestep = np.full(6, 3, np.int32)
    pool_counters = np.zeros(6, np.uint32)
    ck.reset_when_done([live_f], [saved_f], [3], [0], 1, done, timestep, pool_counters, 0, 0, 0)
    assert done.tolist() == [0, 1, 0, 0, 0, 0] and np.all(timestep == 3)
    np.testing.assert_array_equal(live_f[1], saved_f[1])
    ck.reset_when_done(
        [live_f, live_i], [saved_f, saved_i], [3, 2], [0, 0], 2,
        done, timestep, pool_counters, 0, 1, 1,
    )  # fmt: skip
    np.testing.assert_array_equal(live_f, saved_f)
    np.testing.assert_array_equal(live_i, saved_i)
    assert np.all(done == 0) and np.all(timestep == 0)
    assert pool_counters.tolist() == [1, 2, 1, 1, 1, 1]


def test_reset_nothing_done_is_a_no_op() -> None:
    live_f, saved_f, _, _ = _reset_setup()
    before = live_f.copy()
    done = np.zeros(6, np.int32)
    pool_counters = np.zeros(6, np.uint32)
    timestep = np.ones(6, np.int32)
    ck.reset_when_done([live_f], [saved_f], [3], [0], 1, done, timestep, pool_counters, 0, 0, 1)
    np.testing.assert_array_equal(live_f, before)
    assert np.all(pool_counters == 0)


def test_reset_copies_raw_words() -> None:
    """Float entries are copied as bit patterns (NaN payloads survive)."""
    saved = np.array([0x7FA00001, 0xFF800000, 0x00000001, 0x80000000], np.uint32).view(np.float32)
    live = np.zeros(4, np.float32)
    ck.reset_when_done(
        [live], [saved], [2], [0], 1,
        np.ones(2, np.int32), np.zeros(2, np.int32), np.zeros(2, np.uint32), 0, 0, 1,
    )  # fmt: skip
    np.testing.assert_array_equal(live.view(np.uint32), saved.view(np.uint32))


def test_pool_rows_aligned_across_targets_and_exact_row_choice() -> None:
    num_envs, pool = 50, 37
    pool_x = np.arange(pool, dtype=np.float32) + 0.5
    pool_y = (np.arange(pool, dtype=np.int32) * 10 + 3).reshape(pool, 1)
    saved = np.arange(num_envs * 2, dtype=np.float32).reshape(num_envs, 2)
    x = np.zeros(num_envs, np.float32)
    y = np.zeros((num_envs, 1), np.int32)
    live = np.zeros((num_envs, 2), np.float32)
    done = np.zeros(num_envs, np.int32)
    done[::3] = 1
    timestep = np.zeros(num_envs, np.int32)
    pool_counters = np.arange(num_envs, dtype=np.uint32) * 7
    start = pool_counters.copy()
    ck.reset_when_done(
        [x, live, y], [pool_x, saved, pool_y], [1, 2, 1], [pool, 0, pool], 3,
        done, timestep, pool_counters, 2024, 0, 1,
    )  # fmt: skip
    envs = np.arange(0, num_envs, 3)
    idx = (x[envs] - 0.5).astype(int)
    np.testing.assert_array_equal(y[envs, 0], idx * 10 + 3)  # same row for both pools
    np.testing.assert_array_equal(live[envs], saved[envs])
    words = philox_words(2024, ck.POOL_STREAM, envs, start[envs])[:, 0]
    np.testing.assert_array_equal(idx, scale_bits_to_range(words, pool))
    others = np.setdiff1d(np.arange(num_envs), envs)
    assert np.all(x[others] == 0) and np.all(y[others] == 0)
    np.testing.assert_array_equal(pool_counters[envs], start[envs] + 1)
    np.testing.assert_array_equal(pool_counters[others], start[others])


def test_pool_mean_converges_and_rows_are_uniform() -> None:
    num_envs, pool, resets = 2000, 10, 50
    rng = np.random.default_rng(7)
    pool_x = rng.normal(3.0, 1.0, size=pool).astype(np.float32)
    x = np.zeros(num_envs, np.float32)
    done = np.zeros(num_envs, np.int32)
    timestep = np.zeros(num_envs, np.int32)
    pool_counters = np.zeros(num_envs, np.uint32)
    picks = np.empty((resets, num_envs), np.float32)
    for i in range(resets):
        ck.reset_when_done([x], [pool_x], [1], [pool], 1, done, timestep, pool_counters, 99, 1, 1)
        picks[i] = x
    assert np.all(pool_counters == resets)
    n = picks.size
    counts = np.array([(picks == v).sum() for v in pool_x])
    freq = counts / n
    assert np.all(np.abs(freq - 0.1) <= _binomial_tolerance(np.float64(0.1), n))
    # Mean of picks -> pool mean (sd of the estimate = pool sd / sqrt(n)).
    assert abs(picks.mean() - pool_x.mean()) < 5 * pool_x.std() / np.sqrt(n)
    # Consecutive resets of one env draw fresh rows.
    assert np.mean(picks[0] == picks[1]) < 0.2


def test_undo_done_flag_and_reset_timestep() -> None:
    done = np.array([1, 0, 2, 0], np.int32)
    timestep = np.array([4, 5, 6, 7], np.int32)
    ck.undo_done_flag_and_reset_timestep(done, timestep, 0)
    assert done.tolist() == [0, 0, 0, 0] and timestep.tolist() == [0, 5, 0, 7]
    ck.undo_done_flag_and_reset_timestep(done, timestep, 1)
    assert timestep.tolist() == [0, 0, 0, 0]


def test_non_contiguous_argument_is_rejected() -> None:
    done = np.zeros(8, np.int32)[::2]
    with pytest.raises(ValueError):
        ck.undo_done_flag_and_reset_timestep(done, np.zeros(4, np.int32), 1)


# --------------------------------------------------------------------------- logging


def test_log_one_step() -> None:
    episode_length, num_envs, features = 4, 3, 5
    data = np.arange(num_envs * features, dtype=np.float32).reshape(num_envs, features)
    log = np.zeros((episode_length + 1, features), np.float32)
    for t in range(episode_length + 1):
        ck.log_one_step(log, data + t, features, t, 1, episode_length)
    np.testing.assert_array_equal(log, data[1] + np.arange(episode_length + 1)[:, None])
    before = log.copy()
    for t, env in [(-1, 1), (episode_length + 1, 1), (0, -1), (0, num_envs)]:
        ck.log_one_step(log, data + 100, features, t, env, episode_length)
    np.testing.assert_array_equal(log, before)
    # Int data logged into a word buffer keeps its bits.
    ints = np.array([[-1, 7]], np.int32)
    words = np.zeros((2, 2), np.uint32)
    ck.log_one_step(words, ints, 2, 1, 0, 1)
    assert words[1].view(np.int32).tolist() == [-1, 7] and np.all(words[0] == 0)


def test_log_masks() -> None:
    episode_length = 5
    mask = np.full(episode_length + 1, 7, np.int32)
    ck.reset_log_mask(mask, episode_length)
    assert np.all(mask == 0)
    for t in range(3):
        ck.update_log_mask(mask, t, episode_length)
    assert mask.tolist() == [1, 1, 1, 0, 0, 0]
    ck.update_log_mask(mask, 4, episode_length)  # gap: row 3 missing, stays invalid
    ck.update_log_mask(mask, episode_length + 1, episode_length)
    ck.update_log_mask(mask, -1, episode_length)
    assert mask.tolist() == [1, 1, 1, 0, 0, 0]
    for t in range(3, episode_length + 1):
        ck.update_log_mask(mask, t, episode_length)
    assert np.all(mask == 1)


def test_kernels_write_through_cpu_torch_tensors() -> None:
    """The CPU backend's torch tensors share memory with NumPy; writes land in them."""
    torch = pytest.importorskip("torch")
    probs = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float32)
    actions = torch.full((2, 1), -1, dtype=torch.int32)
    counters = torch.zeros(2, dtype=torch.int32)
    flag = torch.zeros(1, dtype=torch.int32)
    ck.sample_actions(probs, actions, counters, flag, None, 2, 2, 1, 0, 0, 0, 0)
    assert actions.reshape(-1).tolist() == [1, 0]
    assert counters.tolist() == [1, 1] and flag.item() == 0
    done = torch.tensor([1, 0], dtype=torch.int32)
    timestep = torch.tensor([3, 4], dtype=torch.int32)
    ck.undo_done_flag_and_reset_timestep(done, timestep, 0)
    assert done.tolist() == [0, 0] and timestep.tolist() == [0, 4]


def test_log_probs_written_and_accumulated() -> None:
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4), size=50).astype(np.float32)
    actions = np.zeros((50, 2), np.int32)
    counters = np.zeros(50, np.uint32)
    flag = np.zeros(1, np.int32)
    lp = np.full(50, 99.0, np.float32)
    ck.sample_actions(probs, actions, counters, flag, lp, 50, 4, 2, 0, 1, 2, 0, 1)
    np.testing.assert_allclose(lp, np.log(probs[np.arange(50), actions[:, 0]]), rtol=1e-6)
    ck.sample_actions(probs, actions, counters, flag, lp, 50, 4, 2, 1, 1, 2, 0, 2)
    joint = np.log(probs[np.arange(50), actions[:, 0]]) + np.log(probs[np.arange(50), actions[:, 1]])
    np.testing.assert_allclose(lp, joint, rtol=1e-5)


def test_gaussian_log_density() -> None:
    rng = np.random.default_rng(4)
    mean = rng.normal(size=(30, 3)).astype(np.float32)
    std = rng.uniform(0.5, 2, size=(30, 3)).astype(np.float32)
    out = np.zeros((30, 3), np.float32)
    lp = np.zeros(30, np.float32)
    ck.sample_gaussian_actions(mean, std, out, np.zeros(30, np.uint32), np.zeros(1, np.int32), lp, 30, 3, 1, 2, 0, 1)
    z = (out - mean) / std
    want = (-0.5 * z**2 - np.log(std) - 0.5 * np.log(2 * np.pi)).sum(1)
    np.testing.assert_allclose(lp, want, rtol=1e-5, atol=1e-5)
