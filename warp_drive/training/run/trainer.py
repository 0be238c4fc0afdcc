"""Trainer: an :class:`~warp_drive.training.engine.Engine`, its run folder, the loop and the checkpoint schedule.

The Trainer *holds* an engine (``trainer.engine``, which does the work: ``trainer.engine.policies``,
``trainer.engine.iteration``, ``trainer.engine.collect()``, ...) and adds the run folder, the loop of
:meth:`Trainer.train` (metric files, progress lines, the checkpoint schedule, stopping on
SIGINT/SIGTERM), checkpoints and evaluation. It forwards none of the engine's names. Every algorithm,
on either backend, trains through this one loop.

WarpDrive 2.7.1's names and methods (``trainer.policies``, ``cuda_envs``, ``fetch_episode_states``,
``load_model_checkpoint``, TrainerDDPG's, ...) are :class:`~warp_drive.training.run.trainer271.Trainer271`'s,
the class at 2.7.1's import paths (``warp_drive.training.trainer.Trainer``, ``trainers.trainer_a2c``, ...).
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from warp_drive.config import RunConfig, load_run_config
from warp_drive.errors import ConfigError
from warp_drive.training import checkpoint_files
from warp_drive.training.engine import Engine
from warp_drive.training.engine.phase_timer import PhaseTimer
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training.run import long_runs
from warp_drive.training.run.checkpoint_check import check_against_run
from warp_drive.training.run.evaluation import evaluate_per_agent
from warp_drive.training.run.finite_checks import check_iteration
from warp_drive.training.run import start_weights
from warp_drive.training.run.periodic_eval import EVAL_METRIC, STATE_KEY, PeriodicEvaluation

logger = logging.getLogger(__name__)

RUN_CONFIG_FILE = "run_config.json"


def check_placeholder_layout(separate: Any, obs_agent_dim: Any) -> None:
    """Validates 2.7.1's placeholder arguments of the trainers."""
    if not isinstance(separate, bool):
        raise ConfigError(f"create_separate_placeholders_for_each_policy={separate!r} must be True or False")
    if separate:
        raise ConfigError(
            "create_separate_placeholders_for_each_policy=True (per-policy observations_<tag>, "
            "sampled_actions_<tag>, rewards_<tag> arrays written by the env step) is not supported: the "
            "trainer gathers each policy's agents from the shared placeholders. Write the step kernel "
            "against the shared arrays (observations, sampled_actions, rewards) and pass False.")
    if obs_agent_dim not in ("first", "last"):
        raise ConfigError(f"obs_dim_corresponding_to_num_agents={obs_agent_dim!r}; use 'first' "
                          "(observations (E, N, *features)) or 'last' ((E, *features, N))")


def run_directory(config: RunConfig, results_dir: str | Path | None) -> Path:
    """``saving.basedir/name/tag/<results_dir>`` (2.7.1's layout; default name:
    :func:`~warp_drive.training.run.run_folder.default_run_name`); an absolute ``results_dir`` is the run directory
    itself, and ``~`` in ``basedir`` is expanded."""
    from warp_drive.training.run.run_folder import default_run_name, run_base

    sv = config.saving
    return run_base(sv.basedir, sv.name, sv.tag) / (str(results_dir) if results_dir is not None else default_run_name())


class Trainer:
    """Trains one model per policy tag on a wrapped env.

    The constructor takes WarpDrive 2.7.1's arguments in 2.7.1's order (its ``TrainerA2C``);
    this project's extras are keyword-only. The engine's state is read and driven through
    :attr:`engine`; 2.7.1's attribute names are :class:`~warp_drive.training.run.trainer271.Trainer271`'s.

    Args:
        env_wrapper: an :class:`~warp_drive.env_wrapper.EnvWrapper` (pycuda or cpu backend).
        config: a :class:`RunConfig`, a dict in the reference YAML format, or a YAML path.
        policy_tag_to_agent_id_map: ``{tag: [agent ids]}``; default: one policy ``shared`` (or the
            config's only tag) over all agents. Agents may be listed in any order.
        create_separate_placeholders_for_each_policy: 2.7.1's per-policy obs/action/reward arrays;
            only ``False`` (shared placeholders) is supported.
        obs_dim_corresponding_to_num_agents: ``"first"``: observation placeholders are
            ``(E, N, *features)``; ``"last"``: ``(E, *features, N)``.
        num_devices: processes training together (DDP world size).
        device_id: this process's device index (2.7.1: also its rank).
        results_dir: run directory, ``saving.basedir/name/tag/<results_dir>`` as in 2.7.1 (an
            absolute path is used as is); default ``<unix time>``.
        verbose: log a progress line per metrics row (logger ``warp_drive.training.run.progress``).
        model_factory: where model types are looked up (custom models: ``factory.add``).
        rank: distributed rank (default ``device_id``).
        tensorboard: also write TensorBoard scalars.
    """

    def __init__(
        self,
        env_wrapper: Any,
        config: RunConfig | Mapping[str, Any] | str,
        policy_tag_to_agent_id_map: Mapping[str, Sequence[int]] | None = None,
        create_separate_placeholders_for_each_policy: bool = False,
        obs_dim_corresponding_to_num_agents: str = "first",
        num_devices: int = 1,
        device_id: int = 0,
        results_dir: str | Path | None = None,
        verbose: bool = True,
        *,
        model_factory: Any = None,
        rank: int | None = None,
        tensorboard: bool = False,
    ) -> None:
        from warp_drive.training.run.logging_utils import MetricsLog

        check_placeholder_layout(create_separate_placeholders_for_each_policy, obs_dim_corresponding_to_num_agents)
        if env_wrapper is None:
            raise ConfigError(f"{type(self).__name__} needs an env_wrapper (an EnvWrapper around the env)")
        config = config if isinstance(config, RunConfig) else load_run_config(config)
        self.verbose = verbose
        self.device_id = device_id
        self.rank = device_id if rank is None else rank
        self.num_devices = num_devices
        self.tensorboard = tensorboard
        self.num_iters = config.trainer.num_iterations(env_wrapper.episode_length)
        self.save_dir = run_directory(config, results_dir)
        #: the engine: env replicas, sampler, policies, buffers, counters (the narrow API)
        self.engine = Engine(env_wrapper, config, policy_tag_to_agent_id_map, rank=self.rank, world_size=num_devices,
                             obs_agents_last=obs_dim_corresponding_to_num_agents == "last", model_factory=model_factory)
        self._metrics_log = MetricsLog(self.save_dir, tensorboard=tensorboard, enabled=self.rank == 0)
        self._run_config_written = False
        #: ``trainer.eval_every`` / ``eval_episodes`` / ``keep_best`` (:mod:`warp_drive.training.run.periodic_eval`)
        self.periodic_eval = PeriodicEvaluation.from_config(config.trainer)
        policies = self.engine.policies  # the config's model_ckpt_filepath entries, if any
        checkpoint_files.load_policy_weights(policies, checkpoint_files.configured_weight_files(policies), self.engine.device)
        #: the weights the run started from (:mod:`warp_drive.training.run.start_weights`; kept in checkpoints;
        #: None after resuming from a checkpoint written without them)
        self.start_weights: start_weights.Weights | None = start_weights.capture(policies)

    def state_dict(self) -> dict[str, Any]:
        """:meth:`Engine.state_dict` plus the run folder (``run_dir``), the weights the run started from
        (``"start_weights"``) and, with ``trainer.eval_every``, the periodic evaluation's best weights so far
        (``"periodic_eval"``)."""
        extra = {STATE_KEY: self.periodic_eval.state_dict()} if self.periodic_eval.enabled else {}
        if self.start_weights is not None:
            extra[start_weights.STATE_KEY] = self.start_weights
        return {**self.engine.state_dict(), "run_dir": str(self.save_dir), **extra}

    #: While :meth:`train` runs in the main thread, SIGINT/SIGTERM stop it at the next iteration
    #: boundary with a checkpoint (:mod:`warp_drive.training.interrupt`); False leaves signals alone.
    handle_signals: bool = True

    _last_checkpoint_time: float | None = None  # monotonic time of the last checkpoint (train() starts the clock)

    #: Seconds an iteration is expected to take before one was timed (the CLIs set it from a probe,
    #: :func:`~warp_drive.training.run.long_runs.probe_iteration_seconds`); then the last iteration's time.
    iteration_seconds: float | None = None
    _saved_at: tuple[int, Path | None] = (-1, None)  # (iteration, path) of the last checkpoint saved or loaded
    _timed_once = False  # an iteration was timed (the estimate after the first one is logged once)

    # ------------------------------------------------------------------ the loop
    def train(self, num_iters: int | None = None) -> dict[str, float]:
        """Run training iterations (all remaining by default); return the last logged metrics.

        The first call force-resets every env; later calls continue the running episodes, so
        ``train(1)`` in a loop trains exactly like one ``train(n)`` call. Metrics are logged after
        the first iteration, at least every tenth of the run and every ``saving.metrics_log_freq``
        iterations (one progress line each when ``verbose``). Checkpoints are written every
        ``saving.model_params_save_freq`` iterations, every ``saving.checkpoint_every_seconds``
        and at the end, always at an iteration boundary.

        Raises:
            NonFiniteError: an observation, reward, model output, loss, gradient or weight of the
                iteration just finished is NaN or infinite, or the sampler flagged bad
                probabilities (:mod:`warp_drive.training.run.finite_checks`); no checkpoint of that
                iteration is written.
            TrainingInterrupted: SIGINT or SIGTERM arrived (main thread, ``handle_signals``): the iteration in
                progress was finished and a checkpoint written first; or, with slow iterations
                (:meth:`stops_inside_iterations`), abandoned at its next env step or update chunk, the checkpoint
                of its starting boundary being the latest; the trainer's memory then holds the partial iteration
                (``load_checkpoint(stop.checkpoint)`` restores the checkpointed state).
        """
        from warp_drive.training.interrupt import IterationAborted, StopRequest, TrainingInterrupted
        from warp_drive.training.run.progress import ProgressLine

        last = self.engine.iteration + (num_iters if num_iters is not None else self.num_iters - self.engine.iteration)
        self._begin_run()  # the first call force-resets every env
        progress = ProgressLine(last, self.engine.policies, enabled=self.verbose and self.rank == 0)
        metrics: dict[str, float] = {}
        with StopRequest(enabled=self.handle_signals) as stop:
            while self.engine.iteration < last:
                began = time.perf_counter()
                stop.allow_abort(self._stop_inside_allowed())  # slow iterations: stop at an env step or update chunk
                try:
                    timer = self._phase_timer(last)  # eager, phase-timed rollout before a logging iteration
                    batches = self.engine.collect(timer)
                    update_metrics = self.engine.update_policies(batches, timer=timer)
                except IterationAborted as abort:  # the partial iteration is discarded; its start is checkpointed
                    raise TrainingInterrupted(abort.signum, self.engine.iteration, self._saved_at[1]) from None
                stop.allow_abort(False)
                self.engine.end_iteration()
                self._note_iteration_time(time.perf_counter() - began)
                check_iteration(self.engine.iteration, (self.engine.policies, self.engine.rollout.shared.rewards, self.engine.sampler, update_metrics))
                self._evaluate_if_due(update_metrics)
                if self._is_log_iteration(last):  # iteration boundary: metrics, checkpoints, a requested stop
                    metrics = self._log(update_metrics, progress)
                signum, path = self._checkpoint_if_due(stop.signum)
                if signum:
                    raise TrainingInterrupted(signum, self.engine.iteration, path if self.rank == 0 else None)
        return metrics

    # ------------------------------------------------------------------ helpers of train()
    def _begin_run(self) -> None:
        """Fresh episodes on the first call, the run config written once, the checkpoint clock started."""
        self.engine.start_episodes()
        self._write_run_config()
        if self._last_checkpoint_time is None:
            self._last_checkpoint_time = time.monotonic()

    def _phase_timer(self, last: int) -> PhaseTimer | None:
        """The timer on iterations whose metrics are logged (phases need eager launches: a CUDA graph is not split)."""
        timing = self.engine.graphed_rollout is None and self._is_log_iteration(last, ahead=1)
        return self.engine.timer if timing else None

    def _log(self, update_metrics: dict[str, dict[str, torch.Tensor]], progress: Any) -> dict[str, float]:
        if self.engine.config.trainer.evaluator:
            self._add_test_metrics(update_metrics)
        metrics = self.log_metrics(update_metrics)
        progress(self.engine.iteration, metrics)
        return metrics

    def _evaluate_if_due(self, update_metrics: dict[str, dict[str, torch.Tensor]]) -> None:
        """``trainer.eval_every``: the periodic evaluation (a logged iteration), and after the last one,
        with ``keep_best``, the best-evaluated weights (:mod:`warp_drive.training.run.periodic_eval`)."""
        if not self.periodic_eval.due(self.engine.iteration, self.num_iters):
            return
        for tag, score in self.periodic_eval.evaluate(self.engine, self.engine.iteration).items():
            update_metrics.setdefault(tag, {})[EVAL_METRIC] = torch.tensor(score, device=self.engine.device)
        if self.engine.iteration == self.num_iters and self.periodic_eval.keep_best:
            self.periodic_eval.restore_best(self.engine)

    def expect_iteration_seconds(self, seconds: float) -> float:
        """Sets :attr:`iteration_seconds` before the first iteration (from a probe); returns it."""
        self.iteration_seconds = float(seconds)
        return self.iteration_seconds

    def stops_inside_iterations(self) -> bool:
        """Whether a stop may end an iteration at its next env step or update chunk
        (:func:`~warp_drive.training.run.long_runs.stops_inside` of :attr:`iteration_seconds`); :meth:`train`
        checkpoints the iteration boundary first."""
        return long_runs.stops_inside(self.iteration_seconds, self.num_devices, self.engine)

    def _stop_inside_allowed(self) -> bool:
        """Slow iterations of one process: checkpoint the boundary (if not yet) and allow a stop inside the next."""
        if not self.stops_inside_iterations():
            return False
        if self._saved_at[0] != self.engine.iteration:
            self.save_checkpoint()
        return True

    def _note_iteration_time(self, seconds: float) -> None:
        """Keeps the iteration time; after the first one on the cpu backend, logs the run's estimate if long."""
        first = not self._timed_once
        self.iteration_seconds, self._timed_once = seconds, True
        if first and self.rank == 0 and torch.device(self.engine.device).type == "cpu":
            long_runs.log_estimate(seconds, self.num_iters - self.engine.iteration + 1, f"first iteration: {seconds:,.1f} s")

    def _checkpoint_if_due(self, signum: int | None) -> tuple[int, Path | None]:
        """Save at the save frequency, every ``checkpoint_every_seconds`` and on a stop request;
        every rank agrees on both. Returns ``(signal number or 0, checkpoint written or None)``."""
        from warp_drive.training.interrupt import agree_across_ranks

        every_s = self.engine.config.saving.checkpoint_every_seconds
        timed = every_s > 0 and time.monotonic() - (self._last_checkpoint_time or 0.0) >= every_s
        signum, timed = agree_across_ranks([signum or 0, int(timed)], self.engine.device)  # ranks act together
        it = self.engine.iteration  # every rank saves its part
        due = it % self.engine.config.saving.model_params_save_freq == 0 or it == self.num_iters
        return signum, self.save_checkpoint() if signum or timed or due else None

    def _is_log_iteration(self, last: int, ahead: int = 0) -> bool:
        """The first iteration, every ``metrics_log_freq``, at least every tenth of the run, and the last: a
        function of the iteration only, so a resumed run logs the rows an uninterrupted one does."""
        from warp_drive.training.run.progress import progress_every

        it = self.engine.iteration + ahead
        if self.periodic_eval.due(it, self.num_iters):
            return True
        return it == 1 or it == last or it % self.engine.config.saving.metrics_log_freq == 0 or it % progress_every(self.num_iters) == 0

    def _add_test_metrics(self, update_metrics: dict[str, dict[str, torch.Tensor]]) -> None:
        """``trainer.evaluator``: one greedy episode per env, logged as ``<tag>/test_episode_*``."""
        returns, lengths = evaluate_per_agent(self.engine, greedy=True)
        for tag in self.engine.policies:
            m = update_metrics.setdefault(tag, {})
            m["test_episode_return_mean"] = torch.tensor(float(returns[tag].mean()), device=self.engine.device)
            m["test_episode_length_mean"] = torch.tensor(float(lengths[tag].mean()), device=self.engine.device)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Write weights, optimizers, counters and RNG states atomically; return the path.

        Also writes every policy's ``<tag>_<timestep>.state_dict`` (2.7.1's file).
        """
        self._last_checkpoint_time = time.monotonic()
        save_dir = Path(self.save_dir)
        if not path and not save_dir.is_dir():  # deleted mid-run: never recreate a partial run folder
            raise FileNotFoundError(errno.ENOENT, "the run folder is gone", str(save_dir))
        path = Path(path) if path else save_dir / f"checkpoint_{self.engine.iteration:08d}.pt"
        if self.rank != 0:  # every rank saves, at the same iteration: rank 0 the shared state, the others their envs
            return ckpt.write_rank_state(path, save_dir, self.rank, self.engine.rank_state_dict())
        written = ckpt.write_checkpoint(path, save_dir, self.state_dict(), checkpoint_files.policy_files(self.engine.policies))
        self._saved_at = (self.engine.iteration, written)
        return written

    def load_checkpoint(self, path: str | Path, state: Mapping[str, Any] | None = None) -> Path:
        """Restore a checkpoint written by :meth:`save_checkpoint` (to resume training).

        ``path`` is a checkpoint file or a run folder (its newest intact checkpoint); ``state`` its
        already-read contents, if the caller has them. Metric rows logged after the checkpoint's
        iteration are dropped, so a resumed run appends no duplicate rows. Returns the file used.

        Raises:
            CheckpointError: see :func:`~warp_drive.training.run.checkpoint.read_checkpoint`.
        """
        path, state = ckpt.read_checkpoint(path, state, self.engine.config, list(self.engine.policies), self.rank, self.num_devices)
        check_against_run(state, path, self.engine.env_wrapper.cuda_data_manager.state_dict(),
                          {tag: p.agent_ids for tag, p in self.engine.policies.items()}, self.num_devices)
        start = start_weights.from_checkpoint(state.get(start_weights.STATE_KEY), self.engine.policies, path)  # checked first
        self.engine.load_state_dict(state, source=f"checkpoint {str(path)!r}")
        self.periodic_eval.load_state_dict(state.get(STATE_KEY), self.engine.policies)
        self.start_weights = start
        if self.rank == 0:
            self._metrics_log.restart_at(self.engine.iteration, self.engine.iteration * self.engine.config.trainer.train_batch_size)
        self._last_checkpoint_time = time.monotonic()
        self._saved_at = (self.engine.iteration, path)
        logger.debug("resumed from %s at iteration %d", path, self.engine.iteration)  # the command lines print it
        return path

    # ------------------------------------------------------------------ metrics and run files
    def log_metrics(self, update_metrics: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        """Collect metrics (one host sync), write them (rank 0), return them as floats."""
        from warp_drive.training.run.logging_utils import gather_metrics

        batch = self.engine.config.trainer.train_batch_size
        metrics = gather_metrics(self.engine.policies, update_metrics, device=self.engine.device, perf=self.engine.perf,
                                 world_size=self.num_devices, num_agents=self.engine.env_wrapper.n_agents,
                                 train_batch_size=batch, phases=self.engine.counters.take_phase_times())
        self._metrics_log.write(self.engine.iteration, self.engine.iteration * batch, metrics)
        return metrics

    def _write_run_config(self) -> None:
        """Write ``run_config.json`` (once per start; rank 0)."""
        if self.rank != 0 or self._run_config_written:
            return
        from warp_drive.training.run.run_folder import write_run_config

        write_run_config(Path(self.save_dir), self.engine.config.to_dict(), RUN_CONFIG_FILE)
        self._run_config_written = True

    def graceful_close(self) -> None:
        """Flush metric files."""
        self._metrics_log.close()
        if self.verbose and self.rank == 0:
            logger.info("trainer closed")

    # ------------------------------------------------------------------ evaluation (warp_drive.training.run.evaluation)
    def evaluate(self, deterministic: bool = True, num_episodes: int | None = None, *,
                 total_episodes: int = 100, random_baseline: bool = True,
                 fresh_starts: bool = True) -> dict[str, dict[str, Any]]:
        """Play episodes with the current policies (no training) and with the uniform-random policy;
        arguments and returned ``{tag: {...}}``: :func:`warp_drive.training.run.evaluation.evaluate`."""
        from warp_drive.training.run.evaluation import evaluate

        return evaluate(self.engine, deterministic=deterministic, num_episodes=num_episodes,
                        total_episodes=total_episodes, random_baseline=random_baseline, fresh_starts=fresh_starts)
