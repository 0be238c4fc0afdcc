"""Confidence intervals of mean episode returns (Student t, 95%) and the comparison of two of them.

The interval is the two-sided 95% Student t interval of the mean over episodes,
``mean ± t(0.975, n - 1) * s / sqrt(n)`` with ``s`` the sample standard deviation: it treats the
episodes as independent draws (fresh start states, or a random policy). ``t(0.975, df)`` is the
exact table value for ``df <= 30`` and the Cornish-Fisher expansion of the t quantile beyond
(error below 1e-5 there), so scipy is not needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from warp_drive.errors import ConfigError

#: The 0.975 quantile of Student's t with df = 1..30 degrees of freedom.
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df >= 1`` degrees of freedom."""
    if df < 1:
        raise ConfigError(f"df={df}: a t quantile needs at least 1 degree of freedom (2 episodes)")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its 95% Student t interval ``[low, high]`` (NaN bounds for n < 2).

    ``spread`` is False when every value was the same (no variation to build an interval from:
    e.g. greedy play from one identical start state).
    """

    mean: float
    low: float
    high: float
    n: int
    spread: bool = True

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.4g} (1 episode, no interval)"
        return f"{self.mean:.4g} ± {self.half_width:.3g}"

    def above(self, other: "Interval") -> bool:
        """True when this interval lies entirely above ``other`` (both from at least 2 values)."""
        return self.n >= 2 and other.n >= 2 and self.low > other.high


def mean_interval(values: Sequence[float] | np.ndarray) -> Interval:
    """The mean of ``values`` with its 95% Student t interval over them.

    Raises:
        ConfigError: no values, or a value that is NaN or infinite.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ConfigError("no episodes to build an interval from; play at least 1 episode")
    if not np.isfinite(x).all():
        raise ConfigError(f"{int((~np.isfinite(x)).sum())} of {x.size} episode returns are NaN or infinite")
    mean = float(x.mean())
    if x.size < 2:
        return Interval(mean, math.nan, math.nan, 1, spread=False)
    half = t_quantile_975(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, int(x.size), spread=bool(x.max() > x.min()))
