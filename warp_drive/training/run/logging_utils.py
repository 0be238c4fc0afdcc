"""A training run's metrics: gathered into one flat dict with a single host sync, and written."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from warp_drive.training.distributed import all_reduce_mean

logger = logging.getLogger(__name__)


def gather_metrics(
    policies: Mapping[str, Any],
    update_metrics: Mapping[str, Mapping[str, torch.Tensor]],
    *,
    device: torch.device,
    perf: Mapping[str, float],
    world_size: int,
    num_agents: int,
    train_batch_size: int,
    phases: Mapping[str, float],
) -> dict[str, float]:
    """``{"<policy>/<metric>": value, "perf/<metric>": value}`` for one logging iteration.

    Tensor metrics of every policy (its episode statistics, popped, and ``update_metrics``
    ``{tag: {name: 0-d tensor}}``) are stacked on ``device``, averaged over ranks and copied to the
    host at once. Throughput is summed over the ``world_size`` processes; ``phases``: seconds per
    rollout phase of the timed iteration (may be empty).
    """
    names: list[str] = []
    tensors: list[torch.Tensor] = []
    for tag, p in policies.items():
        for key, value in [*p.stats.pop().items(), *update_metrics.get(tag, {}).items()]:
            names.append(f"{tag}/{key}")
            tensors.append(value.detach().float().reshape(()).to(device))
    values = all_reduce_mean(torch.stack(tensors)).cpu().tolist() if tensors else []  # mean over ranks
    metrics: dict[str, float] = dict(zip(names, values))
    for tag, p in policies.items():
        for suffix, lr in p.learning_rates().items():  # <tag>/lr (and e.g. DDPG's <tag>/lr_critic)
            metrics[f"{tag}/lr{suffix}"] = lr
        metrics[f"{tag}/timestep"] = float(p.timestep)
    metrics["perf/env_steps_per_s"] = world_size * perf["steps"] / perf["total"] if perf["total"] else float("nan")
    metrics["perf/agent_steps_per_s"] = metrics["perf/env_steps_per_s"] * num_agents
    for phase, seconds in phases.items():
        metrics[f"perf/{phase}_ms_per_iter"] = 1000.0 * seconds
        if seconds > 0:
            metrics[f"perf/{phase}_env_steps_per_s"] = train_batch_size / seconds
    return metrics


class MetricsLog:
    """The metric files of a run folder (:class:`~warp_drive.training.run.metrics.MetricsWriter`),
    opened at the first row (``tensorboard``: TensorBoard scalars too); nothing is written when not
    ``enabled`` (ranks other than 0)."""

    def __init__(self, save_dir: str | Path, *, tensorboard: bool = False, enabled: bool = True) -> None:
        self.save_dir = Path(save_dir)
        self.tensorboard = tensorboard
        self.enabled = enabled
        self.writer: Any = None
        self._purge_step: int | None = None

    def write(self, iteration: int, timestep: int, metrics: Mapping[str, Any]) -> None:
        """One row (the console gets one progress line per row from the trainer, not the table)."""
        if not self.enabled:
            return
        if self.writer is None:
            from warp_drive.training.run.metrics import MetricsWriter

            self.save_dir.mkdir(parents=True, exist_ok=True)
            self.writer = MetricsWriter(self.save_dir, tensorboard=self.tensorboard, console_every=0,
                                        purge_step=self._purge_step)
        self.writer.write(iteration, timestep, metrics)

    def restart_at(self, iteration: int, timestep: int) -> int:
        """Resuming at ``iteration``: rows logged after it would be logged again, so they are removed
        (and TensorBoard restarts after ``timestep``). Returns the rows removed."""
        from warp_drive.training.run.metrics import truncate_metrics

        self.close()
        removed = truncate_metrics(self.save_dir, iteration)
        if removed:
            logger.info("dropped %d metric row(s) logged after iteration %d in %s", removed, iteration, self.save_dir)
        self._purge_step = timestep + 1
        return removed

    def close(self) -> None:
        """Flush and close the files (a later row opens them again)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
