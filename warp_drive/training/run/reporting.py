"""Console reports of a training run in WarpDrive 2.7.1's layout (perf stats, metrics, sampler params).

:class:`PerfStats` is built from the Trainer's own counters (:attr:`Trainer.perf_stats`); the
``pretty_print`` methods print the 40-column tables 2.7.1 printed, for scripts that call them.
The trainer itself reports through :class:`~warp_drive.training.run.metrics.MetricsWriter`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from warp_drive.errors import ConfigError

_RULE = "=" * 40


def all_equal(iterable: Iterable[Any]) -> bool:
    """True when every element is the same (or there are none)."""
    return len(set(iterable)) <= 1


def verbose_print(message: str, device_id: int | None = None) -> None:
    """Prints ``[Device <id>]: message`` (device 0 when None), as 2.7.1's trainers did."""
    print(f"[Device {0 if device_id is None else device_id}]: {message} ")


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


def _print_table(title: str, rows: Iterable[str]) -> None:
    """2.7.1's 40-column table: ``title`` between two rules, then one line per row."""
    print(_RULE)
    print(title)
    print(_RULE)
    for row in rows:
        print(row)


@dataclass
class PerfStats:
    """Throughput counters of a training run (seconds, env steps summed over replicas).

    The three rollout phases are measured on logging iterations (CUDA events; timing every
    iteration would need a host sync per step) and extrapolated to all ``iters`` by their mean;
    ``training_time`` and ``total_time`` are measured on every iteration.
    """

    iters: int = 0
    steps: int = 0
    policy_eval_time: float = 0.0
    action_sample_time: float = 0.0
    env_step_time: float = 0.0
    training_time: float = 0.0
    total_time: float = 0.0

    def get_perf_stats(self) -> dict[str, float]:
        """Mean milliseconds per iteration and env steps per second, per phase and in total."""
        phases = (("policy eval", self.policy_eval_time), ("action sample", self.action_sample_time),
                  ("env. step", self.env_step_time), ("training", self.training_time), ("total", self.total_time))
        out = {f"Mean {name} time per iter (ms)": _ratio(seconds * 1000, self.iters) for name, seconds in phases}
        for name, seconds in phases:
            out[f"Mean steps per sec ({'training time' if name == 'training' else name})"] = _ratio(self.steps, seconds)
        return out

    @staticmethod
    def pretty_print(stats: Mapping[str, float]) -> None:
        """Prints the stats of :meth:`get_perf_stats` as a table."""
        _print_table("Speed performance stats", (f"{key:40}: {value:10.2f}" for key, value in stats.items()))


class Metrics:
    """Prints per-policy metrics ``{policy: {name: value}}`` as 2.7.1 did."""

    def pretty_print(self, metrics: Mapping[str, Mapping[str, float]]) -> None:
        if not isinstance(metrics, Mapping):
            raise ConfigError(f"metrics must be a dict {{policy: {{name: value}}}}; got {type(metrics).__name__}")
        for policy, values in metrics.items():
            _print_table(f"Metrics for policy '{policy}'",
                         (f"{key:40}: {value:10.5f}" for key, value in values.items()))


class SamplerParamsLog:
    """Prints the sampler parameters ``{name: value}`` of an iteration (nothing when empty)."""

    def pretty_print(self, params: Mapping[str, float]) -> None:
        if not isinstance(params, Mapping):
            raise ConfigError(f"sampler params must be a dict {{name: value}}; got {type(params).__name__}")
        if params:
            _print_table("Parameters for sampler", (f"{key:40}: {float(value):10.5f}" for key, value in params.items()))
