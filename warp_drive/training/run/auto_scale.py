"""Auto-scaling: the largest number of envs and the rollout length per env that fit and run fastest.

Every array of the data store, the rollout buffers and the models are torch allocations, so the
memory of a configuration is measured, not guessed: a small probe run gives the bytes per env
(which grow linearly with ``num_envs`` and with the rollout length). The search then

1. predicts the largest ``num_envs`` that fits in the free device memory (with a safety margin)
   and checks it with a real trial, shrinking on an out-of-memory error;
2. with that ``num_envs``, times a few rollout lengths per env and keeps the fastest that fits.

Trials run in this process; an out-of-memory error in a trial is caught, the allocator's cache is
emptied and the next, smaller trial runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

#: A trial: (num_envs, steps_per_env) -> (env steps per second, peak bytes). Raises MemoryError
#: (or torch.cuda.OutOfMemoryError, a subclass of RuntimeError naming "out of memory") when it does not fit.
Trial = Callable[[int, int], tuple[float, int]]
#: Rollout lengths per env that step 2 times.
STEP_CANDIDATES = (25, 50, 100, 200, 400)
#: Share of the free device memory a configuration may use.
MEMORY_FRACTION = 0.8
#: Upper bound on num_envs.
MAX_ENVS = 1 << 20


@dataclass
class Choice:
    """Outcome of :func:`search`: the configuration to train with and every trial made."""

    num_envs: int
    steps_per_env: int
    env_steps_per_s: float
    trials: list[dict] = field(default_factory=list)

    @property
    def train_batch_size(self) -> int:
        return self.num_envs * self.steps_per_env

    def table(self) -> str:
        lines = [f"{'num_envs':>9} {'steps/env':>9} {'env-steps/s':>14} {'peak GiB':>9}  result"]
        for t in self.trials:
            rate = f"{t['env_steps_per_s']:,.0f}" if t.get("env_steps_per_s") else "-"
            peak = f"{t['peak_bytes'] / 2**30:.2f}" if t.get("peak_bytes") else "-"
            lines.append(f"{t['num_envs']:>9} {t['steps_per_env']:>9} {rate:>14} {peak:>9}  {t['result']}")
        lines.append(f"chosen: num_envs={self.num_envs}, train_batch_size={self.train_batch_size} "
                     f"({self.steps_per_env} steps per env), {self.env_steps_per_s:,.0f} env-steps/s")
        return "\n".join(lines)


def is_out_of_memory(err: BaseException) -> bool:
    """True for allocation failures from torch, pycuda or the driver."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or "out of memory" in text or "cuda_error_out_of_memory" in text


def search(trial: Trial, free_bytes: int, start_envs: int, steps_per_env: int) -> Choice:
    """Find ``num_envs`` and steps per env (see the module docstring).

    Args:
        trial: runs a configuration briefly and returns (env-steps/s, peak bytes).
        free_bytes: device memory available to the run (:data:`MEMORY_FRACTION` of it is used).
        start_envs, steps_per_env: the probe configuration (the config's own values).

    Raises:
        ConfigError: even the probe configuration does not fit.
    """
    trials: list[dict] = []

    def run(envs: int, steps: int) -> tuple[float, int] | None:
        try:
            rate, peak = trial(envs, steps)
        except Exception as err:  # noqa: BLE001 - only out-of-memory is expected; others propagate
            if not is_out_of_memory(err):
                raise
            trials.append({"num_envs": envs, "steps_per_env": steps, "result": "out of memory"})
            return None
        trials.append({"num_envs": envs, "steps_per_env": steps, "env_steps_per_s": rate, "peak_bytes": peak,
                       "result": "ok" if peak <= budget else "over the memory margin"})
        return rate, peak

    budget = MEMORY_FRACTION * free_bytes
    probe = run(start_envs, steps_per_env)
    while (probe is None or probe[1] > budget) and start_envs > 1:
        start_envs = max(1, start_envs // 2)
        probe = run(start_envs, steps_per_env)
    if probe is None or probe[1] > budget:
        raise ConfigError(
            f"even num_envs={start_envs} with {steps_per_env} steps per env does not fit in "
            f"{free_bytes / 2**30:.1f} GiB of free device memory; reduce the env size or the model"
        )
    per_env = probe[1] / start_envs  # bytes per env at this rollout length (fixed costs included: conservative)
    envs = max(1, min(MAX_ENVS, int(budget // max(per_env, 1))))
    best_envs, best = start_envs, probe
    while envs > best_envs:
        got = run(envs, steps_per_env)
        if got is not None and got[1] <= budget:
            best_envs, best = envs, got
            break
        envs = max(1, int(envs * 0.75))
    # step 2: the fastest rollout length that fits with best_envs
    choice = Choice(best_envs, steps_per_env, best[0], trials)
    per_step_env = best[1] / (best_envs * steps_per_env)
    for steps in STEP_CANDIDATES:
        if steps == steps_per_env or per_step_env * best_envs * steps > budget:
            continue
        got = run(best_envs, steps)
        if got is not None and got[1] <= budget and got[0] > choice.env_steps_per_s:
            choice.steps_per_env, choice.env_steps_per_s = steps, got[0]
    logger.info("auto-scaling:\n%s", choice.table())
    return choice


def gpu_free_bytes(device: int | None = None) -> int:
    """Free bytes on a CUDA device (plus what torch's cache already holds)."""
    import torch

    free, _total = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def perform_auto_vertical_scaling(setup_trainer_and_train: Callable[..., object], config: dict,
                                  num_iters: int = 2) -> dict:
    """2.7.1's auto-scaling entry point: ``num_envs`` and ``train_batch_size`` for one GPU.

    Each trial calls ``setup_trainer_and_train(trial_config, verbose=False)`` in this process with a
    copy of ``config`` that trains ``num_iters`` iterations of the candidate size (results under a
    temporary directory); the trial's speed and peak device memory drive :func:`search`.

    Returns:
        A copy of ``config`` with ``trainer.num_envs`` and ``trainer.train_batch_size`` chosen
        (``num_episodes`` and the rest unchanged).

    Raises:
        ConfigError: no CUDA device, or ``env.episode_length`` missing from the config.
    """
    import copy
    import gc
    import math
    import tempfile
    import time

    import torch

    if not torch.cuda.is_available():
        raise ConfigError("auto-scaling sizes a run for GPU memory; it needs a CUDA device")
    cfg = copy.deepcopy(dict(config))
    episode_length = cfg.get("env", {}).get("episode_length")
    if not episode_length:
        raise ConfigError("auto-scaling needs env.episode_length in the run config to size the trial runs")
    tmp = tempfile.mkdtemp(prefix="warp_drive_auto_scale_")

    def trial(envs: int, steps: int) -> tuple[float, int]:
        c = copy.deepcopy(cfg)
        c["trainer"] = {**c.get("trainer", {}), "num_envs": envs, "train_batch_size": envs * steps,
                        "num_episodes": math.ceil(num_iters * envs * steps / episode_length)}
        c["saving"] = {**c.get("saving", {}), "basedir": tmp, "metrics_log_freq": 10**9,
                       "model_params_save_freq": 10**9}
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        start = time.perf_counter()
        try:
            setup_trainer_and_train(c, verbose=False)
            torch.cuda.synchronize()
            return num_iters * envs * steps / (time.perf_counter() - start), int(torch.cuda.max_memory_allocated())
        finally:
            gc.collect()
            torch.cuda.empty_cache()

    trainer_cfg = cfg.get("trainer", {})
    envs = int(trainer_cfg.get("num_envs", 10))
    choice = search(trial, gpu_free_bytes(), envs, max(1, int(trainer_cfg.get("train_batch_size", envs)) // envs))
    cfg["trainer"] = {**trainer_cfg, "num_envs": choice.num_envs, "train_batch_size": choice.train_batch_size}
    return cfg
