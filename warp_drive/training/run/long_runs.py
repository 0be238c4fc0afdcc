"""No silent marathons: the time a run will take on the cpu backend, and stops within seconds.

A config sized for a GPU (the bundled configs with ``--full_size``, a user YAML, the Lightning CLI's
``--env`` runs) can take hours per run on a CPU. On the cpu backend:

- before the first iteration the command-line scripts time a short probe (:func:`probe_iteration_seconds`:
  a few env steps and one forward + backward per trained policy, on a copy of the state that is then
  restored, so the run is the same with or without it) and, when the run would take
  :data:`LONG_RUN_S` or more, log :func:`estimate_line`;
- after the first iteration the trainer logs the line again from the measured time;
- iterations of :data:`SLOW_ITERATION_S` or more are checkpointed at every boundary, so that a
  Ctrl-C stops inside the next one within seconds (:meth:`~warp_drive.training.run.trainer.Trainer.stops_inside_iterations`,
  :mod:`warp_drive.training.interrupt`), in the main script and the Lightning CLI alike.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any

import torch

from warp_drive.training.buffers import obs_row
from warp_drive.training.utils.minibatch import map_tensors

logger = logging.getLogger(__name__)

#: Estimated run time (seconds) from which the estimate line is logged.
LONG_RUN_S = 180.0

#: Iteration time (seconds) from which every iteration boundary is checkpointed and a stop is honoured
#: inside the iteration (one process only).
SLOW_ITERATION_S = 5.0

#: Env steps the probe times (after one untimed step).
PROBE_STEPS = 2


def estimate_line(total_s: float, iterations: int, source: str) -> str:
    """The one line that tells how long the run will take on the cpu backend."""
    return (f"estimated {total_s / 60:,.0f} min for {iterations:,} iterations on the cpu backend ({source}); "
            "--env runs use CPU-sized settings unless --full_size; Ctrl-C stops with a checkpoint")


def log_estimate(per_iteration_s: float, iterations: int, source: str) -> float:
    """Logs :func:`estimate_line` when the run takes :data:`LONG_RUN_S` or more; returns the estimate."""
    total = per_iteration_s * iterations
    if total >= LONG_RUN_S:
        logger.warning("%s", estimate_line(total, iterations, source))
    return total


def probe_iteration_seconds(engine: Any) -> float:
    """Seconds one training iteration of ``engine`` (:class:`~warp_drive.training.engine.Engine`) will take, from :data:`PROBE_STEPS` timed env
    steps (times the steps per iteration) plus one forward + backward of every trained policy over
    one step's agents (times the steps per iteration and its epochs). The engine's state (envs,
    counters, random streams, weights, gradients) is restored afterwards."""
    state = copy.deepcopy(engine.state_dict())
    R = engine.rollout
    try:
        with torch.no_grad():
            R.begin(record=True)
            R.step(0)
            start = time.perf_counter()
            for step in range(1, 1 + PROBE_STEPS):
                R.step(step)
            step_s = (time.perf_counter() - start) / PROBE_STEPS
        update_s = 0.0
        for p in engine.policies.values():
            if not p.to_train:
                continue
            start = time.perf_counter()
            leaves: list[torch.Tensor] = []
            carried = () if p.carried is None else (p.carried.inputs(),)  # a recurrent model's state
            map_tensors(leaves.append, p.model(obs_row(p.buffers, 0), *carried))
            sum(o.float().sum() for o in leaves).backward()
            update_s += (time.perf_counter() - start) * p.config.num_epochs
            p.model.zero_grad(set_to_none=True)
    finally:
        engine.load_state_dict(state, source="the state before the time probe")
    return (step_s + update_s) * engine.steps_per_iter


def stops_inside(iteration_seconds: float | None, world_size: int, engine: Any) -> bool:
    """Whether a stop may end an iteration at its next env step or update chunk: iterations of
    :data:`SLOW_ITERATION_S` or more (``iteration_seconds``, measured or probed), one process, and a rollout
    that is not a CUDA graph (which replays as one unit). The caller checkpoints the iteration boundary first:
    :meth:`Trainer.train <warp_drive.training.run.trainer.Trainer.train>`, and the Lightning CLI's callback
    (:func:`~warp_drive.training.lightning.cli_runs.run_callback`)."""
    slow = (iteration_seconds or 0.0) >= SLOW_ITERATION_S
    return slow and world_size == 1 and engine.graphed_rollout is None
