"""Time the phases of a rollout (policy, sampling, env step, training) without per-step syncs.

On CUDA, events are recorded between phases and read once, when the timings are collected; on
the CPU, wall-clock intervals are summed directly.
"""

from __future__ import annotations

import time
from collections import defaultdict

import torch


class PhaseTimer:
    """Accumulates time per phase name between :meth:`mark` calls."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self._pending: list[tuple[str, object, object]] = []
        self._totals: dict[str, float] = defaultdict(float)
        self._last: object = None
        self._phase: str | None = None

    def start(self, phase: str) -> None:
        """Begin ``phase`` (ending the previous one)."""
        now = self._now()
        if self._phase is not None:
            self._close(now)
        self._phase, self._last = phase, now

    def stop(self) -> None:
        """End the current phase."""
        if self._phase is not None:
            self._close(self._now())
        self._phase = None

    def _now(self) -> object:
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def _close(self, now: object) -> None:
        if self.cuda:
            self._pending.append((self._phase, self._last, now))  # type: ignore[arg-type]
        else:
            self._totals[self._phase] += now - self._last  # type: ignore[operator]

    def totals(self) -> dict[str, float]:
        """Seconds per phase so far (synchronizes once on CUDA); then resets."""
        if self._pending:
            self._pending[-1][2].synchronize()  # type: ignore[attr-defined]
            for phase, a, b in self._pending:
                self._totals[phase] += a.elapsed_time(b) / 1000.0  # type: ignore[attr-defined]
            self._pending.clear()
        out = dict(self._totals)
        self._totals.clear()
        return out


class _TimesNothing(PhaseTimer):
    """A timer that times nothing: passed to a rollout, it forces the eager path (a CUDA graph captures it)."""

    def __init__(self) -> None:
        pass

    def start(self, phase: str) -> None:
        pass

    def stop(self) -> None:
        pass


#: the timer that times nothing (see :class:`_TimesNothing`)
EAGER = _TimesNothing()
