"""Tests of the NumPy Philox4x32-10 twin (warp_drive.utils.philox)."""

from __future__ import annotations

import numpy as np
import pytest

from warp_drive.utils.philox import (
    box_muller,
    philox4x32_10,
    philox_words,
    scale_bits_to_range,
    to_uint32,
    uniform_from_bits,
)

# Random123 kat_vectors, philox4x32_10: (ctr, key, expected output).
KAT_VECTORS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("ctr, key, expected", KAT_VECTORS)
def test_known_answer_vectors(ctr, key, expected) -> None:
    out = philox4x32_10(np.array(ctr, dtype=np.uint32), np.array(key, dtype=np.uint32))
    assert out.dtype == np.uint32
    assert out.tolist() == list(expected)


def test_vectorised_and_broadcast_match_scalar_calls() -> None:
    ctr = np.array([v[0] for v in KAT_VECTORS], dtype=np.uint32)
    key = np.array([v[1] for v in KAT_VECTORS], dtype=np.uint32)
    out = philox4x32_10(ctr, key)
    assert out.tolist() == [list(v[2]) for v in KAT_VECTORS]
    # One key broadcast over a (2, 3) grid of counters.
    grid = np.arange(24, dtype=np.uint32).reshape(2, 3, 4)
    batch = philox4x32_10(grid, np.array([7, 9], dtype=np.uint32))
    assert batch.shape == (2, 3, 4)
    for i in range(2):
        for j in range(3):
            single = philox4x32_10(grid[i, j], np.array([7, 9], dtype=np.uint32))
            np.testing.assert_array_equal(batch[i, j], single)


def test_philox_words_layout_and_signed_seed() -> None:
    out = philox_words(-1, 5, np.arange(3), 2, 1)
    ctr = np.array([[r, 2, 1, 0] for r in range(3)], dtype=np.uint32)
    np.testing.assert_array_equal(out, philox4x32_10(ctr, np.array([0xFFFFFFFF, 5], np.uint32)))
    assert to_uint32(-1) == np.uint32(0xFFFFFFFF)
    assert to_uint32(2**32 + 3) == np.uint32(3)
    np.testing.assert_array_equal(to_uint32(np.array([-2, 1])), np.array([2**32 - 2, 1], np.uint32))


def test_uniform_range_and_moments() -> None:
    edges = uniform_from_bits(np.array([0, 0xFF, 0x100, 0xFFFFFFFF], dtype=np.uint32))
    assert edges.dtype == np.float32
    assert edges[0] == 0.0 and edges[1] == 0.0
    assert edges[2] == np.float32(2.0**-24)
    assert edges[3] == np.float32(1.0 - 2.0**-24) and edges[3] < 1.0
    u = uniform_from_bits(philox_words(42, 0, np.arange(200_000), 0)[:, 0])
    assert u.min() >= 0.0 and u.max() < 1.0
    # Mean 1/2 (sd of the estimate ~6.5e-4) and variance 1/12, 6-sigma bounds.
    assert abs(u.mean() - 0.5) < 4e-3
    assert abs(u.var() - 1.0 / 12.0) < 3e-3
    # Ten equal bins: chi-square with 9 dof, 40 is far beyond the 1e-5 quantile (~37).
    counts = np.bincount((u * 10).astype(int), minlength=10)
    expected = len(u) / 10
    assert ((counts - expected) ** 2 / expected).sum() < 40


def test_all_four_words_uniform() -> None:
    words = philox_words(7, 1, np.arange(50_000), 3)
    u = uniform_from_bits(words)
    assert np.all(np.abs(u.mean(axis=0) - 0.5) < 0.01)


def test_streams_seeds_and_counters_are_independent() -> None:
    rows = np.arange(100_000)
    a = uniform_from_bits(philox_words(1, 0, rows, 0)[:, 0])
    b = uniform_from_bits(philox_words(1, 1, rows, 0)[:, 0])  # other stream
    c = uniform_from_bits(philox_words(2, 0, rows, 0)[:, 0])  # other seed
    d = uniform_from_bits(philox_words(1, 0, rows, 1)[:, 0])  # next call
    for other in (b, c, d):
        assert np.mean(a == other) < 1e-3
        # |corr| of independent samples: sd ~ 1/sqrt(n) ~ 3.2e-3; 6 sigma bound.
        assert abs(np.corrcoef(a, other)[0, 1]) < 0.02
    # Neighbouring rows of one stream are uncorrelated too.
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.02


def test_scale_bits_to_range_is_exact_floor() -> None:
    words = philox_words(3, 4, np.arange(10_000), 0)[:, 0]
    for n in (1, 3, 10, 1000, 2**31 - 1):
        rows = scale_bits_to_range(words, n)
        assert rows.min() >= 0 and rows.max() < n
        exact = np.floor(uniform_from_bits(words).astype(np.float64) * n).astype(np.int64)
        np.testing.assert_array_equal(rows, exact)
    top = scale_bits_to_range(np.uint32(0xFFFFFFFF), 2**31 - 1)
    assert top == ((2**24 - 1) * (2**31 - 1)) >> 24 and top < 2**31 - 1


def test_box_muller_moments_and_edges() -> None:
    words = philox_words(9, 2, np.arange(200_000), 0)
    z0, z1 = box_muller(words[:, 0], words[:, 1])
    assert z0.dtype == np.float32 and z1.dtype == np.float32
    z = np.concatenate([z0, z1])
    assert abs(z.mean()) < 0.01
    assert abs(z.std() - 1.0) < 0.01
    assert abs(np.corrcoef(z0, z1)[0, 1]) < 0.02
    # x0 = 0 gives u1 = 1 (radius 0); x0 = max gives u1 = 2**-24 (finite radius).
    e0, e1 = box_muller(np.array([0, 0xFFFFFFFF], np.uint32), np.array([0, 0], np.uint32))
    assert e0[0] == 0.0 and e1[0] == 0.0
    assert np.isfinite(e0[1]) and abs(e0[1] - np.sqrt(-2 * np.log(2.0**-24))) < 1e-5
