"""The per-iteration bookkeeping of a run: iterations, seconds per phase, env steps."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from warp_drive.training.engine.phase_timer import PhaseTimer


class RunCounters:
    """The per-iteration bookkeeping of a run, for every engine and driver.

    ``iteration`` counts finished iterations; ``perf`` holds ``rollout``, ``training`` and ``total``
    seconds and ``steps`` (env steps, summed over the replicas of this process); ``timer`` times the
    rollout phases (policy, sampling, env_step, training) on the iterations a driver asks for, and
    :meth:`take_phase_times` adds them to ``phase_seconds``.
    """

    def __init__(self, device: torch.device, env_steps_per_iteration: int) -> None:
        self.iteration = 0
        self.perf: dict[str, float] = {"rollout": 0.0, "training": 0.0, "total": 0.0, "steps": 0}
        self.timer = PhaseTimer(device)
        self.phase_seconds: dict[str, float] = {}
        self.timed_iterations = 0
        self._steps = int(env_steps_per_iteration)
        self._iteration_start: float | None = None

    @contextlib.contextmanager
    def timed(self, key: str) -> Iterator[None]:
        """Adds the seconds of the ``with`` block to ``perf[key]`` (and starts the iteration's clock)."""
        start = time.perf_counter()
        if self._iteration_start is None:
            self._iteration_start = start
        try:
            yield
        finally:
            self.perf[key] = self.perf.get(key, 0.0) + (time.perf_counter() - start)

    def end_iteration(self, since: float | None = None) -> None:
        """One more iteration of ``env_steps_per_iteration`` steps; ``total`` grows by the time since
        ``since`` (``time.perf_counter()`` value; default: the start of its first timed block)."""
        now = time.perf_counter()
        start = since if since is not None else (self._iteration_start if self._iteration_start is not None else now)
        self.iteration += 1
        self.perf["steps"] = self.perf.get("steps", 0) + self._steps
        self.perf["total"] = self.perf.get("total", 0.0) + (now - start)
        self._iteration_start = None

    def take_phase_times(self) -> dict[str, float]:
        """The timer's seconds per phase since the last call (one host sync on CUDA), also added to
        ``phase_seconds`` (a timed iteration)."""
        phases = self.timer.totals()
        if phases:
            for phase, seconds in phases.items():
                self.phase_seconds[phase] = self.phase_seconds.get(phase, 0.0) + seconds
            self.timed_iterations += 1
        return phases

    def load(self, iteration: int | None = None, perf: Mapping[str, Any] | None = None) -> None:
        """Restore the counters of a checkpoint (numbers only)."""
        if iteration is not None:
            self.iteration = int(iteration)
        if perf:
            self.perf.update({k: v for k, v in perf.items() if isinstance(v, (int, float))})

    def steps_per_second(self) -> float:
        return self.perf["steps"] / self.perf["total"] if self.perf["total"] else math.nan
