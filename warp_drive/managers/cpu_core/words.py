"""Kernel arguments as flat 4-byte word arrays: what a CUDA kernel's pointers are, for the NumPy twins.

The twins read and write a pointer argument (C-contiguous, 4-byte items, e.g. a CPU torch tensor) in
place through these views, reinterpreting the words as float32, int32 or uint32 as the kernel does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from warp_drive.errors import DataShapeError

__all__ = ["row_ids", "row_view", "word_view"]


def word_view(arr: Any, dtype: type[np.generic]) -> np.ndarray:
    """Flat, writable 1-D view sharing memory with ``arr`` (a NumPy array, or anything ``np.asarray``
    maps without copying), its 4-byte items reinterpreted as ``dtype`` (float32, int32 or uint32).

    Raises:
        DataShapeError: ``arr`` is not C-contiguous or its items are not 4 bytes.
    """
    a = np.asarray(arr)
    if not a.flags.c_contiguous:
        raise DataShapeError("kernel arguments must be C-contiguous (writes would be lost); pass np.ascontiguousarray(x)")
    if a.dtype.itemsize != 4:
        raise DataShapeError(f"kernel arguments must have 4-byte items, got {a.dtype}; cast to float32 or int32")
    flat = a.reshape(-1)
    return flat if flat.dtype == dtype else flat.view(dtype)


def row_view(arr: Any, dtype: type[np.generic], num_rows: int, row_size: int) -> np.ndarray:
    """``(num_rows, row_size)`` view of the first ``num_rows * row_size`` words of ``arr``."""
    return word_view(arr, dtype)[: num_rows * row_size].reshape(num_rows, row_size)


def row_ids(first: int, count: int) -> np.ndarray:
    """uint32 row indices ``first .. first + count - 1`` (counter word 0 of the rows' draws)."""
    return np.arange(first, first + count, dtype=np.uint32)
