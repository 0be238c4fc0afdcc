"""Minimal stand-ins for ``gym.spaces.Discrete`` and ``Box`` when the retired ``gym`` package is
not installed. Like gym's own classes they are not gymnasium spaces: warp_drive must recognise
them by class name and attributes."""

from __future__ import annotations

import numpy as np


class Space:
    """Base of the stand-ins (gym's spaces also derive from a class named Space)."""


class Discrete(Space):
    def __init__(self, n: int, start: int = 0) -> None:
        self.n = int(n)
        self.start = int(start)
        self.shape = ()
        self.dtype = np.dtype(np.int64)


class Box(Space):
    def __init__(self, low: float, high: float, shape: tuple[int, ...], dtype: type = np.float32) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.low = np.full(self.shape, low, self.dtype)
        self.high = np.full(self.shape, high, self.dtype)
