"""Bit-exact NumPy twin of the Philox4x32-10 generator in ``cuda/core/philox.cuh``.

Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC'11) is counter based: ``philox4x32_10(ctr, key)`` is a pure function, so the
CPU backend reproduces the GPU's draws exactly given the same counters. All
functions are vectorised over leading axes.

Counter layout used by warp_drive: ``ctr = (row, call_count[row], word_block, 0)``,
``key = (seed, stream_id)``.
"""

from __future__ import annotations

import numpy as np

from warp_drive.errors import DataShapeError

__all__ = [
    "PHILOX_M0",
    "PHILOX_M1",
    "PHILOX_W0",
    "PHILOX_W1",
    "philox4x32_10",
    "philox_words",
    "uniform_from_bits",
    "scale_bits_to_range",
    "box_muller",
    "to_uint32",
]

PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint32(0x9E3779B9)
PHILOX_W1 = np.uint32(0xBB67AE85)

_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_TWO_PI = 2.0 * np.pi


def to_uint32(value: int | np.ndarray) -> np.ndarray | np.uint32:
    """An integer or integer array (e.g. a signed ``int`` seed) modulo 2**32 as ``np.uint32`` (two's complement)."""
    if np.isscalar(value):
        return np.uint32(int(value) & 0xFFFFFFFF)
    arr = np.asarray(value)
    if arr.dtype == np.uint32:
        return arr
    return (arr.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)


def _round(c0, c1, c2, c3, k0, k1):
    """One Philox4x32 round on uint64 arrays holding 32-bit values."""
    p0 = PHILOX_M0 * c0  # exact: both factors < 2**32
    p1 = PHILOX_M1 * c2
    hi0, lo0 = p0 >> _SHIFT32, p0 & _MASK32
    hi1, lo1 = p1 >> _SHIFT32, p1 & _MASK32
    return hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0


def philox4x32_10(ctr: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Philox4x32-10 block function (twin of ``wkPhilox4x32_10`` in ``philox.cuh``).

    Args:
        ctr: Counters, shape ``(..., 4)``, values taken modulo 2**32.
        key: Keys, shape ``(..., 2)``, broadcastable against ``ctr[..., :2]``.

    Returns:
        ``uint32`` array of shape ``broadcast(ctr.shape[:-1], key.shape[:-1]) + (4,)``.
    """
    ctr = to_uint32(np.asarray(ctr)).astype(np.uint64)
    key = to_uint32(np.asarray(key)).astype(np.uint64)
    if ctr.shape[-1] != 4 or key.shape[-1] != 2:
        raise DataShapeError(f"expected ctr (..., 4) and key (..., 2), got {ctr.shape}, {key.shape}")
    c0, c1, c2, c3 = (ctr[..., i] for i in range(4))
    k0, k1 = key[..., 0], key[..., 1]
    w0, w1 = np.uint64(PHILOX_W0), np.uint64(PHILOX_W1)
    c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
    for _ in range(9):
        k0 = (k0 + w0) & _MASK32
        k1 = (k1 + w1) & _MASK32
        c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
    return np.stack(np.broadcast_arrays(c0, c1, c2, c3), axis=-1).astype(np.uint32)


def philox_words(
    seed: int,
    stream: int,
    c0: int | np.ndarray,
    c1: int | np.ndarray,
    c2: int | np.ndarray = 0,
    c3: int | np.ndarray = 0,
) -> np.ndarray:
    """Philox output for ``ctr = (c0, c1, c2, c3)`` (e.g. row, call count, word block, 0: scalars or
    arrays broadcast together) and ``key = (seed, stream)`` (any ints, taken modulo 2**32): a
    ``uint32`` array of shape ``broadcast(c0, c1, c2, c3) + (4,)``."""
    words = np.broadcast_arrays(*(to_uint32(np.asarray(c)) for c in (c0, c1, c2, c3)))
    ctr = np.stack(words, axis=-1)
    key = np.array([to_uint32(seed), to_uint32(stream)], dtype=np.uint32)
    return philox4x32_10(ctr, key)


def uniform_from_bits(x: np.ndarray) -> np.ndarray:
    """Uniform float32 in ``[0, 1)`` from the top 24 bits of ``uint32`` words: ``(x >> 8) * 2**-24``,
    exact in float32 (twin of ``wkUniformFromBits``)."""
    x = np.asarray(x, dtype=np.uint32)
    return (x >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def scale_bits_to_range(x: np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """Exact ``floor(uniform_from_bits(x) * n)`` in integers (``wkScaleBitsToRange``): int64 values in
    ``[0, n)`` (0 where ``n == 0``) for ``uint32`` words ``x`` and sizes ``n >= 0`` broadcast against them."""
    top = (np.asarray(x, dtype=np.uint32) >> np.uint32(8)).astype(np.uint64)
    return ((top * np.asarray(n, dtype=np.uint64)) >> np.uint64(24)).astype(np.int64)


def box_muller(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normals per pair of words (twin of ``wkBoxMuller``).

    ``u1 = 1 - uniform(x0)`` in ``(0, 1]``, ``u2 = uniform(x1)``,
    ``z0 = r cos(2 pi u2)``, ``z1 = r sin(2 pi u2)``, ``r = sqrt(-2 log u1)``.
    Evaluated in float64 from the exact float32 uniforms (``x0``: the radius's ``uint32`` words,
    ``x1``: the angle's) and rounded once to float32, so it agrees with the CUDA float32 version
    within the rounding error of the device's transcendental functions (a few ulp).
    """
    u1 = (np.float32(1.0) - uniform_from_bits(x0)).astype(np.float64)
    u2 = uniform_from_bits(x1).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1))
    angle = _TWO_PI * u2
    return (r * np.cos(angle)).astype(np.float32), (r * np.sin(angle)).astype(np.float32)
