"""Gather the trainer's metrics into one flat dict with a single host sync, and write them."""

from __future__ import annotations

import logging
from typing import Any

import torch

from warp_drive.training.distributed import all_reduce_mean

logger = logging.getLogger(__name__)


def collect_metrics(trainer: Any, update_metrics: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
    """``{"<policy>/<metric>": value, "perf/<metric>": value}`` for this logging iteration.

    Tensor metrics of every policy are stacked and copied to the host at once.
    """
    names: list[str] = []
    tensors: list[torch.Tensor] = []
    for tag, p in trainer.policies.items():
        for key, value in p.stats.pop().items():
            names.append(f"{tag}/{key}")
            tensors.append(value.float().reshape(()))
        for key, value in update_metrics.get(tag, {}).items():
            names.append(f"{tag}/{key}")
            tensors.append(value.detach().float().reshape(()).to(trainer.device))
    values = all_reduce_mean(torch.stack(tensors)).cpu().tolist() if tensors else []  # mean over ranks
    metrics: dict[str, float] = dict(zip(names, values))
    for tag, p in trainer.policies.items():
        metrics[f"{tag}/lr"] = p.lr_schedule.get_param_value(p.timestep)
        metrics[f"{tag}/timestep"] = float(p.timestep)
    perf = trainer.perf
    world = trainer.num_devices
    metrics["perf/env_steps_per_s"] = world * perf["steps"] / perf["total"] if perf["total"] else float("nan")
    metrics["perf/agent_steps_per_s"] = metrics["perf/env_steps_per_s"] * trainer.env_wrapper.n_agents
    phases = trainer.timer.totals()
    if phases and hasattr(trainer, "phase_seconds"):  # for Trainer.perf_stats: means over timed iterations
        for phase, seconds in phases.items():
            trainer.phase_seconds[phase] = trainer.phase_seconds.get(phase, 0.0) + seconds
        trainer.timed_iterations += 1
    batch = trainer.config.trainer.train_batch_size
    for phase, seconds in phases.items():
        metrics[f"perf/{phase}_ms_per_iter"] = 1000.0 * seconds
        if seconds > 0:
            metrics[f"perf/{phase}_env_steps_per_s"] = batch / seconds
    if trainer.rank == 0 and trainer.metrics_writer is None:
        from warp_drive.training.metrics import MetricsWriter

        trainer.save_dir.mkdir(parents=True, exist_ok=True)
        # the console gets one progress line per row (warp_drive.training.progress), not the table
        trainer.metrics_writer = MetricsWriter(trainer.save_dir, tensorboard=trainer.tensorboard, console_every=0,
                                               purge_step=getattr(trainer, "_tensorboard_purge_step", None))
    if trainer.metrics_writer is not None:
        trainer.metrics_writer.write(trainer.iteration, trainer.iteration * batch, metrics)
    return metrics
