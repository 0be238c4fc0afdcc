"""Progress of a training run: one line per logged metrics row.

Each time the trainer logs metrics (:meth:`~warp_drive.training.run.trainer.Trainer.train`), :class:`ProgressLine`
logs one line (logger ``warp_drive.training.run.progress``, level INFO), e.g.::

    iteration 12/40 (30%) | 18.2 s | 2,431 env steps/s | runner return -0.812 | tagger return 7.56
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Iterable

logger = logging.getLogger(__name__)

#: metrics shown per policy in the progress line, with their short names
POLICY_FIELDS = (("episode_return_mean", "return"),)


def progress_every(num_iterations: int, parts: int = 10) -> int:
    """Iterations between progress lines so that a run of ``num_iterations`` gets about ``parts``."""
    return max(1, math.ceil(num_iterations / parts))


def format_progress(iteration: int, total: int, seconds: float, metrics: Mapping[str, float],
                    policies: Iterable[str]) -> str:
    """One line: iteration, share of the run, wall time, throughput and each policy's return."""
    share = f" ({100 * iteration / total:.0f}%)" if total else ""
    parts = [f"iteration {iteration:,}/{total:,}{share}", f"{seconds:.1f} s"]
    rate = metrics.get("perf/env_steps_per_s")
    if rate is not None and math.isfinite(rate):
        parts.append(f"{rate:,.0f} env steps/s")
    for tag in policies:
        for key, short in POLICY_FIELDS:
            value = metrics.get(f"{tag}/{key}")
            if value is not None:
                parts.append(f"{tag} {short} {value:.3g}" if math.isfinite(value) else f"{tag} {short} n/a")
    return " | ".join(parts)


class ProgressLine:
    """Logs :func:`format_progress` lines for one :meth:`Trainer.train` call."""

    def __init__(self, total: int, policies: Iterable[str], enabled: bool = True) -> None:
        self.total = total
        self.policies = list(policies)
        self.enabled = enabled
        self.start = time.perf_counter()

    def __call__(self, iteration: int, metrics: Mapping[str, float]) -> None:
        if self.enabled:
            logger.info("%s", format_progress(iteration, self.total, time.perf_counter() - self.start, metrics,
                                              self.policies))
