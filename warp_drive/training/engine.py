"""The training engine: a run's env replicas, sampler, policies and rollout buffers behind one API.

Every driver of a run goes through the same few calls: :class:`~warp_drive.training.trainer.Trainer`
(an engine plus the training loop, metric files, the checkpoint schedule and 2.7.1's methods), the
Lightning module (:mod:`warp_drive.training.lightning`), checkpoints
(:mod:`warp_drive.training.checkpoint`) and evaluation (:mod:`warp_drive.training.evaluation`).
One iteration, whoever drives it::

    batches = engine.collect()                 # one on-device rollout -> {tag: training batch}
    metrics = engine.update_policies(batches)  # every trained policy: epochs x minibatches
    engine.end_iteration()                     # the per-iteration bookkeeping, in one place

:meth:`Engine.state_dict` / :meth:`Engine.load_state_dict` hold everything a resume needs.
Other modules read an engine through its attributes and change it only through its methods.

The engine is built by its constructor, which takes WarpDrive 2.7.1's ``Trainer`` arguments
(env wrapper -> engine); :func:`warp_drive.training.build.build_trainer` adds the step before
(run config -> env -> env wrapper) for the command lines, the Lightning engine factory and
``setup_trainer_and_train``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from warp_drive.config import RunConfig, load_run_config
from warp_drive.errors import ConfigError, UsageError
from warp_drive.training.distributed import unwrap
from warp_drive.training.models.factory import ModelFactory
from warp_drive.training.phase_timer import PhaseTimer
from warp_drive.training.policy_state import validate_policy_map

logger = logging.getLogger(__name__)

Tensor = torch.Tensor
#: ``{policy tag: {"obs", "actions", "advantages", "returns", "old_log_probs", "old_values"}}``
PolicyBatches = dict[str, dict[str, Any]]
#: ``clip_gradients(optimizer, max_norm or None)``: Lightning's clipping instead of the engine's.
ClipHook = Callable[[Any, "float | None"], None]

RUN_CONFIG_FILE = "run_config.json"

#: Where model types are looked up unless an engine gets its own ``model_factory`` (custom models:
#: ``DEFAULT_MODEL_FACTORY.add``).
DEFAULT_MODEL_FACTORY = ModelFactory()

#: cpu backend: agent-samples (rows x agents) per chunk of a policy forward in the rollout and of
#: the update's forward + backward (gradients accumulated over chunks): activations stay cache-sized
#: instead of growing with the batch (2.75 M samples x 256 floats per layer at the tutorial config).
CPU_CHUNK_SAMPLES = 4096


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
    """``saving.basedir/name/tag/<results_dir>`` (2.7.1's layout; default: a unique
    ``<unix time>.<microseconds>-<pid>-<random>``, :func:`~warp_drive.training.run_folder.default_run_name`).

    An absolute ``results_dir`` is the run directory itself; ``~`` in ``basedir`` is expanded.
    """
    from warp_drive.training.run_folder import default_run_name, run_base

    sv = config.saving
    return run_base(sv.basedir, sv.name, sv.tag) / (str(results_dir) if results_dir is not None else default_run_name())


def rank_seed_of(seed: int, rank: int) -> int:
    """The env and sampler seed of ``rank``: the streams differ per rank, the weights do not."""
    return (seed + 1000 * rank) & 0x7FFFFFFF


# ----------------------------------------------------------------------------- bookkeeping
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

    def perf_stats(self) -> Any:
        """2.7.1's :class:`~warp_drive.training.reporting.PerfStats` (phase means over the timed
        iterations, extrapolated to every iteration)."""
        from warp_drive.training.reporting import PerfStats

        iters = self.iteration

        def total(phase: str) -> float:
            return self.phase_seconds.get(phase, 0.0) / self.timed_iterations * iters if self.timed_iterations else 0.0

        return PerfStats(iters=iters, steps=int(self.perf["steps"]), policy_eval_time=total("policy"),
                         action_sample_time=total("sampling"), env_step_time=total("env_step"),
                         training_time=self.perf["training"], total_time=self.perf["total"])


# ----------------------------------------------------------------------------- what every engine shares
class EngineBase:
    """The config and env checks, seeds, run folder, counters, metric files, episode starts and
    WarpDrive 2.7.1's attribute names of an :class:`Engine`.

    The constructor takes 2.7.1's ``Trainer`` arguments in 2.7.1's order; subclasses build their
    policies in :meth:`_build`.
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
        from warp_drive.training.logging_utils import MetricsLog

        check_placeholder_layout(create_separate_placeholders_for_each_policy, obs_dim_corresponding_to_num_agents)
        if env_wrapper is None:
            raise ConfigError(f"{type(self).__name__} needs an env_wrapper (an EnvWrapper around the env)")
        self.config = config if isinstance(config, RunConfig) else load_run_config(config)
        self._check_config(self.config)
        tc = self.config.trainer
        if tc.num_envs != env_wrapper.n_envs:
            raise ConfigError(f"trainer.num_envs={tc.num_envs} but the EnvWrapper holds {env_wrapper.n_envs} envs; make them equal")
        self.env_wrapper = env_wrapper
        self.verbose = verbose
        self.device_id = device_id
        self.rank = device_id if rank is None else rank
        self.num_devices = num_devices
        self.tensorboard = tensorboard
        self.obs_agents_last = obs_dim_corresponding_to_num_agents == "last"
        self.steps_per_iter = tc.batch_size_per_env
        self.num_iters = tc.num_iterations(env_wrapper.episode_length)
        self.bootstrap_at_time_limit = tc.bootstrap_at_time_limit
        self.seed = tc.seed if tc.seed is not None else secrets.randbits(31)
        self.rank_seed = rank_seed_of(self.seed, self.rank)
        self.save_dir = run_directory(self.config, results_dir)
        if env_wrapper.reset_on_host:
            env_wrapper.reset_all_envs()
        self.device = env_wrapper.cuda_data_manager.device
        self.started = False  # envs are force-reset by the first train() call (and by evaluation)
        self.counters = RunCounters(self.device, tc.train_batch_size)
        self._metrics_log = MetricsLog(self.save_dir, tensorboard=tensorboard, enabled=self.rank == 0)
        self._run_config_written = False
        pmap = policy_tag_to_agent_id_map or {self.config.policy_tags[0]: list(range(env_wrapper.n_agents))}
        self.policy_tag_to_agent_id_map = validate_policy_map(dict(pmap), env_wrapper.n_agents, self.config.policy_tags)
        self.policies: dict[str, Any] = {}
        self._build(model_factory)

    # ------------------------------------------------------------------ subclass hooks
    def _check_config(self, config: RunConfig) -> None:
        """Rejects configs this engine cannot train (subclasses)."""

    def _build(self, model_factory: Any) -> None:  # pragma: no cover - every engine overrides it
        raise NotImplementedError

    def _seed(self) -> None:
        """Same initial weights on every rank (torch's seed); per-rank reset-pool stream."""
        torch.manual_seed(self.seed)  # model initialisation and minibatch shuffles; envs and sampler use Philox
        self.env_wrapper.init_reset_pool(self.rank_seed + 1)

    # ------------------------------------------------------------------ episodes and bookkeeping
    def start_episodes(self) -> None:
        """Force-reset every env and the running episode statistics once: before the first
        iteration (later calls continue the running episodes)."""
        if not self.started:
            self.restart_episodes()

    def restart_episodes(self) -> None:
        """Force-reset every env and the running episode statistics (after an evaluation, or when a
        driver starts training from fresh episodes)."""
        self.env_wrapper.reset_all_envs()
        for p in self.policies.values():
            p.stats.reset_running()
        self.started = True

    def end_iteration(self, since: float | None = None) -> None:
        """The per-iteration bookkeeping (see :meth:`RunCounters.end_iteration`)."""
        self.counters.end_iteration(since)

    @property
    def iteration(self) -> int:
        """Training iterations done."""
        return self.counters.iteration

    @property
    def perf(self) -> dict[str, float]:
        """Counters: ``rollout``, ``training``, ``total`` seconds and env ``steps``. Read it; the
        engine's methods update it."""
        return self.counters.perf

    @property
    def timer(self) -> PhaseTimer:
        """The phase timer of the rollout and update (see :meth:`RunCounters.take_phase_times`)."""
        return self.counters.timer

    @property
    def phase_seconds(self) -> dict[str, float]:
        return self.counters.phase_seconds

    @property
    def timed_iterations(self) -> int:
        return self.counters.timed_iterations

    @property
    def perf_stats(self) -> Any:
        """2.7.1's :class:`~warp_drive.training.reporting.PerfStats` from this run's counters."""
        return self.counters.perf_stats()

    @property
    def env_steps_per_second(self) -> float:
        return self.counters.steps_per_second()

    # ------------------------------------------------------------------ metrics and run files
    def log_metrics(self, update_metrics: dict[str, dict[str, Tensor]]) -> dict[str, float]:
        """Collect metrics (one host sync), write them (rank 0), return them as floats."""
        from warp_drive.training.logging_utils import gather_metrics

        batch = self.config.trainer.train_batch_size
        metrics = gather_metrics(self.policies, update_metrics, device=self.device, perf=self.perf,
                                 world_size=self.num_devices, num_agents=self.env_wrapper.n_agents,
                                 train_batch_size=batch, phases=self.counters.take_phase_times())
        self._metrics_log.write(self.iteration, self.iteration * batch, metrics)
        return metrics

    @property
    def metrics_writer(self) -> Any:
        """The open :class:`~warp_drive.training.metrics.MetricsWriter` (None before the first row)."""
        return self._metrics_log.writer

    def _files_to_load(self, ckpts_dict: Mapping[str, Any] | None, expected: str) -> dict[str, Any]:
        """``ckpts_dict`` checked (a mapping over this engine's policy tags), or (None) each
        policy's ``model.model_ckpt_filepath``: what ``load_model_checkpoint`` loads."""
        if ckpts_dict is None:
            return {tag: getattr(p.config.model, "model_ckpt_filepath", "") for tag, p in self.policies.items()}
        if not isinstance(ckpts_dict, Mapping):
            raise ConfigError(f"ckpts_dict must map policy tags to {expected}; got {type(ckpts_dict).__name__}")
        for tag in ckpts_dict:
            if tag not in self.policies:
                raise ConfigError(f"checkpoint for unknown policy {tag!r}; policies: {', '.join(self.policies)}")
        return dict(ckpts_dict)

    def _write_run_config(self) -> None:
        """Write the run config as one JSON object to ``run_config.json``, replacing the file (once
        per start; rank 0)."""
        if self.rank != 0 or self._run_config_written:
            return
        from warp_drive.training.run_folder import write_run_config

        write_run_config(Path(self.save_dir), self.config.to_dict(), RUN_CONFIG_FILE)
        self._run_config_written = True

    def graceful_close(self) -> None:
        """Flush metric files."""
        self._metrics_log.close()
        if self.verbose and self.rank == 0:
            logger.info("trainer closed")

    # ------------------------------------------------------------------ 2.7.1 attribute names
    @property
    def cuda_envs(self) -> Any:
        """The env wrapper (2.7.1's name)."""
        return self.env_wrapper

    @property
    def num_envs(self) -> int:
        return self.config.trainer.num_envs

    @property
    def num_episodes(self) -> int:
        return self.config.trainer.num_episodes

    @property
    def training_batch_size(self) -> int:
        """Env steps per iteration, summed over replicas (2.7.1's name)."""
        return self.config.trainer.train_batch_size

    @property
    def training_batch_size_per_env(self) -> int:
        return self.steps_per_iter

    @property
    def policies_to_train(self) -> list[str]:
        return [tag for tag, p in self.policies.items() if p.to_train]

    @property
    def models(self) -> dict[str, torch.nn.Module]:
        """``{tag: model}`` (DDPG: the actors)."""
        return {tag: p.model for tag, p in self.policies.items()}

    @property
    def current_timestep(self) -> dict[str, int]:
        """``{tag: env steps trained on}`` (drives the schedules)."""
        return {tag: p.timestep for tag, p in self.policies.items()}


# ----------------------------------------------------------------------------- A2C / PPO
class _EagerMarker(PhaseTimer):
    """A timer that times nothing: forces the eager rollout path (used while capturing)."""

    def __init__(self) -> None:
        pass

    def start(self, phase: str) -> None:
        pass

    def stop(self) -> None:
        pass


_EAGER = _EagerMarker()


def _sync_each(normalizers: list[Any]) -> None:
    """Average every return normalizer's statistics over the torch.distributed ranks (if any)."""
    from warp_drive.training.distributed import sync_buffers

    for normalizer in normalizers:
        sync_buffers(normalizer)


class Engine(EngineBase):
    """Every policy's algorithm over GPU-resident rollouts: one policy object per tag, built by its
    algorithm's registry entry (:mod:`warp_drive.config.algorithms`: A2C, PPO, DDPG, ...) and driven
    through the hooks of :class:`~warp_drive.training.algorithms.base.Policy`; the engine names no
    algorithm.

    Each iteration rolls out ``B = train_batch_size // num_envs`` steps per env on the device (policy
    forward without gradient, in-kernel sampling, env step, reset of done envs: no host sync per
    step), then updates every trained policy from the batch, still on the device. The same code runs
    on the cpu backend, where every policy forward of the rollout and the update's forward +
    backward run on chunks of about ``cpu_chunk_samples`` agent-samples (attribute, default
    :data:`CPU_CHUNK_SAMPLES`; gradients are accumulated over the chunks). On a GPU the update's
    forward + backward run whole unless a minibatch's activations would exceed a share of the free
    device memory; then they run in chunks too (:meth:`update_chunk_rows`), so the update's memory
    is bounded whatever the batch.

    Args: WarpDrive 2.7.1's ``Trainer`` arguments; see :class:`~warp_drive.training.trainer.Trainer`.
    """

    def _build(self, model_factory: Any) -> None:
        from warp_drive.managers.sampler import Sampler
        from warp_drive.training.cuda_graph import GraphedRollout
        from warp_drive.training.rollout import Rollout, RolloutSpec
        from warp_drive.env.constants import Constants

        dm = self.env_wrapper.cuda_data_manager
        self.obs_names = [Constants.OBSERVATIONS] if dm.is_data_on_device(Constants.OBSERVATIONS) else sorted(
            n for n in dm.names() if n.startswith(Constants.OBSERVATIONS + "_") and not n.endswith(Constants.AT_RESET_SUFFIX))
        # a reset restores the saved observations, unless fresh start states draw new ones
        self.reset_obs_known = (all(n in dm.reset_data_list for n in self.obs_names)
                                and not self.env_wrapper.fresh_start_states)
        self._check_obs_layout(dm)
        self._seed()
        self.sampler = Sampler(self.env_wrapper.cuda_function_manager)
        self.sampler.init_random(self.rank_seed)
        factory = model_factory or DEFAULT_MODEL_FACTORY
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.policies = {tag: self._build_policy(tag, ids, factory) for tag, ids in self.policy_tag_to_agent_id_map.items()}
        self.load_model_checkpoint()  # the config's model_ckpt_filepath entries, if any
        self.cpu_chunk_samples = CPU_CHUNK_SAMPLES
        self.update_chunk_samples: int | None = None  # GPU update chunks; None: sized automatically
        self.rollout = Rollout(RolloutSpec(self.env_wrapper, self.policies, self.sampler, self.obs_names, self.steps_per_iter,
                                           self.reset_obs_known, self.bootstrap_at_time_limit, self.cpu_chunk_rows),
                               greedy=self.config.sampler.use_argmax)
        self._collected = False
        tc = self.config.trainer
        self.graphed_rollout: GraphedRollout | None = None
        eager_only = [p.tag for p in self.policies.values() if not p.captures_in_cuda_graph]
        if tc.use_cuda_graph:
            if self.device.type != "cuda":
                logger.debug("trainer.use_cuda_graph applies to the pycuda backend; running eagerly on %s", self.device)
            elif eager_only:
                logger.info("trainer.use_cuda_graph: policies %s act with host-side parameters a CUDA graph would "
                            "freeze; the rollout runs eagerly", eager_only)
            else:
                self.graphed_rollout = GraphedRollout(lambda: self.generate_rollout(_EAGER),
                                                      self.env_wrapper.cuda_function_manager)
        if tc.tf32 and self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        #: autocast dtype of the update's forward and backward (``trainer.update_precision``), or None
        self.update_autocast_dtype = torch.bfloat16 if tc.update_precision == "bf16" else None

    def _build_policy(self, tag: str, ids: list[int], factory: Any) -> Any:
        """The policy of ``tag``, built by its algorithm's registry entry (:mod:`warp_drive.config.algorithms`)."""
        from warp_drive.config.algorithms import algorithm_entry
        from warp_drive.training.algorithms.base import BuildContext
        from warp_drive.training.distributed import wrap_model
        from warp_drive.training.rollout import policy_obs

        pc = self.config.policy[tag]
        dm = self.env_wrapper.cuda_data_manager
        ctx = BuildContext(tag, list(ids), pc, self.config, self.env_wrapper.env, dm, self.sampler, self.obs_names,
                           self.steps_per_iter, self.env_wrapper.n_envs, self.env_wrapper.n_agents, self.device,
                           self.generator, factory, self.obs_agents_last,
                           lambda module: wrap_model(module, self.device),
                           lambda policy: policy_obs(dm, policy, self.obs_names))
        return algorithm_entry(pc.algorithm, f"policy.{tag}.algorithm").policy_builder()(ctx)

    def _check_obs_layout(self, dm: Any) -> None:
        """The agent axis of every observation placeholder (second, or last with "last") has N entries."""
        n = self.env_wrapper.n_agents
        for name in self.obs_names:
            shape = tuple(dm.get_shape(name))
            axis = len(shape) - 1 if self.obs_agents_last else 1
            if len(shape) < 2 or shape[axis] != n:
                layout = "(E, *features, N)" if self.obs_agents_last else "(E, N, *features)"
                other = "first" if self.obs_agents_last else "last"
                raise ConfigError(
                    f"placeholder '{name}' has shape {shape}, not {layout} with N={n} agents; if its agent "
                    f"axis is the other one, pass obs_dim_corresponding_to_num_agents={other!r}")

    # ------------------------------------------------------------------ the narrow API: collect, update
    def collect(self, timer: PhaseTimer | None = None) -> PolicyBatches:
        """One on-device rollout of every env, then the training batch of every trained policy.

        ``timer`` (:attr:`timer`, on the iterations a driver times) splits the rollout into its
        phases; the rollout then runs eagerly even with a CUDA graph.

        Returns:
            ``{tag: batch}``, device tensors (views of the rollout buffers unless
            ``trainer.neg_pos_env_ratio`` keeps a subset of envs): see :meth:`batches`.
        """
        with self.counters.timed("rollout"):
            self.generate_rollout(timer)
            return self.batches()

    def generate_rollout(self, timer: PhaseTimer | None = None) -> dict[str, Tensor]:
        """Fill every policy's buffers with ``steps_per_iter`` env steps (no host sync).

        Returns ``{tag: V(s_B)}``, the values of the observations after the last step.
        """
        self._collected = True
        if self.graphed_rollout is not None and timer is None:
            return self.graphed_rollout()
        return self.rollout.run(timer)

    def batches(self) -> PolicyBatches:
        """The training batches of every trained policy from the current rollout buffers.

        Advantages and returns are those the rollout computed at its end (``Rollout.finalize``,
        return normalizer included). With ``trainer.neg_pos_env_ratio`` only a subset of envs is
        kept (:meth:`_env_subset`, one host sync).

        Shapes:
            obs: (B, E, A, *obs) (or a dict of those); actions: (B, E, A, columns);
            advantages, returns, old_log_probs, old_values: (B, E, A).
        """
        from warp_drive.training.utils.minibatch import index_tree

        envs = self._env_subset() if self.config.trainer.neg_pos_env_ratio > 0 else None
        out: PolicyBatches = {}
        for p in self.policies.values():
            if not p.to_train:
                continue
            batch = p.batch()
            out[p.tag] = batch if envs is None or not p.batch_has_env_axis else index_tree(batch, envs, dim=1)
        return out

    def update_policies(
        self,
        batches: Mapping[str, Mapping[str, Any]],
        *,
        optimizers: Mapping[str, Any] | None = None,
        backward: Callable[[Tensor], None] | None = None,
        clip_gradients: ClipHook | None = None,
        track_grad_norm: bool = True,
        sync_normalizers: Callable[[list[Any]], None] | None = None,
        timer: PhaseTimer | None = None,
    ) -> dict[str, dict[str, Tensor]]:
        """One update (epochs x minibatches) of every trained policy; every policy's timestep
        advances by ``train_batch_size``.

        The hooks let a driver such as Lightning take over parts of each gradient step; by
        default the engine does everything itself.

        Args:
            batches: :meth:`collect`'s output (``{tag: batch}`` for every trained policy).
            optimizers: ``{tag: {name: optimizer}}`` (names: the policy's ``optimizers()``; one
                optimizer instead of the mapping for a policy with one) to step instead of the
                policies' own (e.g. Lightning's wrappers of them).
            backward: replaces ``loss.backward()`` (e.g. Lightning's ``manual_backward``).
            clip_gradients: ``clip_gradients(optimizer, max_norm)`` replaces the clipping
                (``max_norm`` None when the policy does not clip).
            track_grad_norm: report ``grad_norm`` when ``clip_gradients`` is given.
            sync_normalizers: averages the trained policies' return and reward-scale statistics over ranks
                (default: over the torch.distributed process group, if any).
            timer: times the update as phase ``training``.

        Returns:
            ``{tag: metrics}`` (0-d device tensors, no host sync).

        Raises:
            UsageError: no rollout was collected yet, or ``batches`` lacks a trained policy.
        """
        from warp_drive.training.algorithms.base import UpdateContext

        if not self._collected:
            raise UsageError("update_policies() trains on a rollout: call collect() (or generate_rollout()) first")
        trained = [p for p in self.policies.values() if p.to_train]
        missing = [p.tag for p in trained if p.tag not in batches]
        if missing:
            raise UsageError(f"the batch has no entry for trained policies {missing} (keys: {sorted(batches)}); "
                             "pass what collect() returned")
        out: dict[str, dict[str, Tensor]] = {}
        with self.counters.timed("training"):
            if timer is not None:
                timer.start("training")
            for p in self.policies.values():
                p.timestep += self.config.trainer.train_batch_size
            (sync_normalizers or _sync_each)([n for p in trained for n in p.running_statistics()])  # same statistics on every rank
            for p in trained:
                given = None if optimizers is None else optimizers[p.tag]
                context = UpdateContext(
                    self.generator, self.config.trainer.train_batch_size,
                    optimizers=given if given is None or isinstance(given, Mapping) else dict.fromkeys(p.optimizers(), given),
                    backward=backward, clip_gradients=clip_gradients, track_grad_norm=track_grad_norm,
                    chunk_rows=self.update_chunk_rows(p), autocast_dtype=self.update_autocast_dtype)
                out[p.tag] = p.update(batches[p.tag], context)
            if timer is not None:
                timer.stop()
        return out

    def cpu_chunk_rows(self, num_agents: int) -> int | None:
        """Rows per chunk of a policy of ``num_agents`` agents on the cpu backend (envs per rollout
        forward, (time, env) samples per update chunk; ``cpu_chunk_samples`` agent-samples); None
        on a GPU, which runs every forward and backward whole."""
        if self.device.type != "cpu":
            return None
        return max(1, int(self.cpu_chunk_samples) // max(1, num_agents))

    def update_chunk_rows(self, p: Any) -> int | None:
        """Rows ((time, env) samples) per forward + backward chunk of policy ``p``'s update: the cpu
        chunks on the cpu backend; on a GPU ``update_chunk_samples`` agent-samples (attribute; None:
        sized from the model and the free device memory by
        :func:`~warp_drive.training.update_memory.auto_chunk_samples`). A minibatch that fits runs whole."""
        if self.device.type == "cpu":
            return self.cpu_chunk_rows(p.num_agents)
        from warp_drive.training.update_memory import auto_chunk_samples

        samples = self.update_chunk_samples
        if samples is None:
            samples = auto_chunk_samples(unwrap(p.model), self.device)
        return None if samples is None else max(1, int(samples) // max(1, p.num_agents))

    def use_local_gradients(self) -> None:
        """Train the models themselves, not their DistributedDataParallel wrappers (a driver such
        as Lightning's DDP strategy all-reduces the gradients itself)."""
        for p in self.policies.values():
            p.use_local_gradients()

    def _env_subset(self) -> Tensor | None:
        """``trainer.neg_pos_env_ratio``: the envs to train on this iteration, or None for all.

        Envs whose rollout holds a success (``_done_ == 2``) are kept, plus at most ``ratio`` times as
        many others drawn at random; the count is raised to the next size that the policies'
        ``num_minibatches`` divide. One host sync per iteration.
        """
        done = self.rollout.shared.done  # (B, E)
        positive = (done == 2).any(0)
        num_pos = int(positive.sum())
        E = positive.shape[0]
        keep = num_pos + int(num_pos * self.config.trainer.neg_pos_env_ratio)
        if num_pos == 0 or keep >= E:
            return None
        while keep < E and any((self.steps_per_iter * keep * p.num_agents) % p.config.num_minibatches
                               for p in self.policies.values() if p.to_train):
            keep += 1
        if keep >= E:
            return None
        order = torch.randperm(E, device=positive.device, generator=self.generator)
        shuffled = order[torch.argsort((~positive[order]).int(), stable=True)]  # positives first, others shuffled
        return torch.sort(shuffled[:keep]).values

    # ------------------------------------------------------------------ sampling mode (evaluation)
    @property
    def deterministic(self) -> bool:
        """Greedy actions (argmax / Gaussian mean) instead of sampled ones."""
        return self.rollout.greedy

    @deterministic.setter
    def deterministic(self, greedy: bool) -> None:
        self.rollout.set_greedy(bool(greedy))

    @contextlib.contextmanager
    def evaluation_episodes(self, greedy: bool) -> Iterator[Any]:
        """Force-reset every env and play with greedy (or sampled) actions; on exit restore the
        sampling mode and force-reset again, so training continues from fresh episodes.

        Yields:
            The :class:`~warp_drive.training.rollout.Rollout` to step (its policy outputs are
            those of the reset observations).
        """
        saved = self.rollout.set_greedy(greedy)
        try:
            self.env_wrapper.reset_all_envs()
            self.rollout.begin()
            yield self.rollout
        finally:
            self.rollout.set_greedy(saved)
            self.restart_episodes()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything a resume needs, as plain data (tensors, numbers, strings, containers).

        Keys: ``format_version``, ``iteration``, ``seed``, ``world_size``, ``config``, ``run_dir``,
        ``policies`` (``{tag: {model, optimizer, algorithm, timestep, agent_ids}}``), ``sampler``,
        ``rank_state`` (:meth:`rank_state_dict`), ``rng`` and ``perf``
        (:mod:`warp_drive.training.checkpoint` writes and reads it).
        """
        from warp_drive.training.checkpoint_files import FORMAT_VERSION

        return {
            "format_version": FORMAT_VERSION,
            "iteration": self.iteration,
            "seed": self.seed,
            "world_size": self.num_devices,
            "config": self.config.to_dict(),
            "run_dir": str(self.save_dir),
            "policies": {tag: p.state_dict() for tag, p in self.policies.items()},
            "sampler": {"seed": self.sampler.seed},
            "rank_state": self.rank_state_dict(),
            "rng": {
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                "generator": self.generator.get_state(),
            },
            "perf": dict(self.perf),
        }

    def rank_state_dict(self) -> dict[str, Any]:
        """What differs between ranks: env replicas, reset-pool and sampler counters, episode statistics."""
        return {
            "sampler_counters": self.sampler.counters_state(),
            # the env replicas themselves, so a resumed run continues the same episodes
            "data_store": self.env_wrapper.cuda_data_manager.state_dict(),
            "env_resetter": self.env_wrapper.env_resetter.state_dict(),
            "episode_carry": {tag: [p.stats.running_return, p.stats.running_length] for tag, p in self.policies.items()},
            # episodes completed since the last metrics row (a checkpoint between logging iterations)
            "episode_sums": {tag: [p.stats.return_sum, p.stats.length_sum, p.stats.count] for tag, p in self.policies.items()},
            "started": self.started,
        }

    def load_state_dict(self, state: Mapping[str, Any], source: str = "checkpoint") -> None:
        """Restore :meth:`state_dict` output; ``state["rank_state"]`` None (no env state for this
        rank) starts from fresh episodes.

        Raises:
            CheckpointError: policy weights or optimizer states that do not fit (the message starts
                with ``source``).
        """
        from warp_drive.training.checkpoint_files import checkpoint_error, first_line

        for tag, p in self.policies.items():
            try:
                p.load_state_dict(state["policies"][tag])
            except (RuntimeError, ValueError, KeyError) as err:
                raise checkpoint_error(f"{source}: the weights of policy '{tag}' do not fit its model "
                                       f"({first_line(err)})", "mismatch") from err
        self.counters.load(state["iteration"], state.get("perf"))
        if state.get("seed") is not None:  # the run's seed, also when the config leaves it null
            self.seed = int(state["seed"])
            self.rank_seed = rank_seed_of(self.seed, self.rank)
        self.sampler.init_random(self.rank_seed)
        torch.set_rng_state(state["rng"]["torch"].cpu())
        if state["rng"]["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in state["rng"]["cuda"]])
        self.generator.set_state(state["rng"]["generator"].cpu())
        rank_state = state.get("rank_state")
        if rank_state is None:
            self.started = False  # no env state for this rank: start from fresh episodes
            return
        self.sampler.load_counters_state({k: v.to(self.device) for k, v in rank_state["sampler_counters"].items()})
        self.env_wrapper.cuda_data_manager.load_state_dict(rank_state["data_store"])
        self.env_wrapper.env_resetter.load_state_dict(rank_state["env_resetter"])
        for tag, (ret, length) in rank_state["episode_carry"].items():
            self.policies[tag].stats.running_return.copy_(ret)
            self.policies[tag].stats.running_length.copy_(length)
        for tag, sums in rank_state.get("episode_sums", {}).items():
            stats = self.policies[tag].stats
            for target, value in zip((stats.return_sum, stats.length_sum, stats.count), sums):
                target.copy_(value)
        self.started = bool(rank_state["started"])

    def load_progress(self, iteration: int, timesteps: Mapping[str, int], perf: Mapping[str, Any] | None = None) -> None:
        """Restore the counters: iterations, per-policy timesteps and ``perf``."""
        self.counters.load(iteration, perf)
        for tag, p in self.policies.items():
            p.timestep = int(timesteps[tag])

    def random_state(self) -> dict[str, Any]:
        """This rank's random streams: sampler seed and counters, the shuffle generator, torch's
        CPU RNG and this device's CUDA RNG (None off CUDA)."""
        dev = torch.device(self.device)
        return {"sampler": {"seed": int(self.sampler.seed or 0), "counters": self.sampler.counters_state()},
                "generator": self.generator.get_state(), "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None}

    def load_random_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`random_state` output."""
        dev = torch.device(self.device)
        self.sampler.init_random(int(state["sampler"]["seed"]))
        self.sampler.load_counters_state({k: v.to(dev) for k, v in state["sampler"]["counters"].items()})
        self.generator.set_state(state["generator"].cpu())
        torch.set_rng_state(state["torch_rng"].cpu())
        if state.get("cuda_rng") is not None and dev.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), dev)

    def load_model_checkpoint(self, ckpts_dict: Mapping[str, Any] | None = None) -> None:
        """Load policy weights: ``{tag: path}`` (or ``{tag: {role: path}}`` for policies of several
        networks, e.g. DDPG's ``{"actor": path, "critic": path}``), or (None) each policy's
        ``model.model_ckpt_filepath``.

        Files may be 2.7.1's ``.state_dict`` files (its parameter names) or ours; they are read with
        ``torch.load(weights_only=True)``. As in 2.7.1, a policy's timestep (which drives its
        schedules) is taken from the file names ``<tag>[_<role>]_<timestep>.state_dict`` when they
        have one, and must agree across a policy's files.

        Raises:
            ConfigError: an unknown policy tag or role, a missing or unreadable file, weights that do
                not fit the policy's networks (the message lists the mismatching names), or files of
                one policy at different timesteps.
        """
        from warp_drive.training import checkpoint_files as ckpt

        for tag, paths in self._files_to_load(ckpts_dict, "file paths").items():
            p = self.policies[tag]
            roles = p.weight_files()
            by_role = dict(paths) if isinstance(paths, Mapping) else {next(iter(roles)): paths}
            unknown = sorted(set(by_role) - set(roles))
            if unknown:
                raise ConfigError(f"policy '{tag}' has no network {unknown[0]!r} to load; its files are "
                                  f"{{{', '.join(repr(r) for r in roles)}: path}}")
            steps = {}
            for role, path in by_role.items():
                if not path:
                    continue
                state = ckpt.load_state_dict_file(path, self.device)
                try:
                    p.load_weights(role, state)
                except RuntimeError as err:
                    raise ConfigError(f"{path} does not fit {f'the {role} of ' if role else ''}policy '{tag}' "
                                      f"({type(unwrap(roles[role])).__name__}): {err}") from err
                steps[role] = ckpt.timestep_from_filename(path)
                logger.info("policy '%s' %sloaded from %s", tag, f"{role} " if role else "", path)
            found = {s for s in steps.values() if s is not None}
            if len(found) > 1:
                raise ConfigError(f"policy '{tag}': its files are at different timesteps {steps}; load files saved together")
            if found:
                p.timestep = found.pop()

    def policy_files(self) -> dict[str, tuple[int, torch.nn.Module]]:
        """``{file prefix: (timestep, module)}``: what the ``<prefix>_<timestep>.state_dict`` files
        hold (prefix ``<tag>``, or ``<tag>_<role>`` for policies of several networks)."""
        return {(f"{tag}_{role}" if role else tag): (p.timestep, module)
                for tag, p in self.policies.items() for role, module in p.weight_files().items()}

    def save_model_checkpoint(self, iteration: int = 0) -> list[Path]:
        """2.7.1's weight files: ``<save_dir>/<tag>_<timestep>.state_dict`` for every policy.

        As in 2.7.1, only on iterations where ``iteration % saving.model_params_save_freq == 0`` or
        the last one (``num_iters - 1``), and only on rank 0. Fully connected categorical policies
        are written with 2.7.1's parameter names (2.7.1 loads them), other models with their own.

        Returns:
            The files written (empty when this iteration does not save).
        """
        from warp_drive.training.checkpoint_files import write_policy_files

        freq = self.config.saving.model_params_save_freq
        if self.rank != 0 or not (iteration % freq == 0 or iteration == self.num_iters - 1):
            return []
        paths = write_policy_files(Path(self.save_dir), self.policy_files())
        for path in paths:
            logger.info("policy weights written: %s", path)
        return paths

    def evaluate_episodes(self, **sample_params: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """One episode per env with the current policies (2.7.1's evaluator).

        Args:
            sample_params: ``use_argmax=True`` for greedy actions (default: the config's
                ``sampler.params.use_argmax``).

        Returns:
            ``(episodic_reward_sum, episodic_step_sum)``: ``{tag: (E, A_p)}`` per-agent returns
            (every step's reward, the last one included) and ``{tag: (E,)}`` episode lengths.
        """
        from warp_drive.training.evaluation import evaluate_per_agent, greedy_from_sample_params

        return evaluate_per_agent(self, greedy_from_sample_params(sample_params, self.config.sampler.use_argmax))

    def fetch_episode_states(
        self,
        list_of_states: list[str] | None = None,
        env_id: int = 0,
        include_rewards_actions: bool = False,
        include_probabilities: bool = False,
        policy: str = "",
        **sample_params: Any,
    ) -> Any:
        """Play one episode and return env ``env_id``'s data arrays at every step (2.7.1's API).

        See :func:`warp_drive.training.evaluation.fetch_episode_states` for the return layout.
        ``sample_params``: ``use_argmax=True`` for greedy actions.
        """
        from warp_drive.training.evaluation import fetch_episode_states, greedy_from_sample_params

        greedy = greedy_from_sample_params(sample_params, self.config.sampler.use_argmax)
        return fetch_episode_states(self, list_of_states, env_id, include_rewards_actions, include_probabilities,
                                    policy, greedy)

    # ------------------------------------------------------------------ evaluation (warp_drive.training.evaluation)
    def evaluate(self, deterministic: bool = True, num_episodes: int | None = None, *,
                 total_episodes: int = 100, random_baseline: bool = True,
                 fresh_starts: bool = True) -> dict[str, dict[str, Any]]:
        """Play episodes from fresh start states with the current policies (no training) and with
        the uniform-random policy; report both with 95% Student t intervals over episodes.

        ``num_episodes`` per env replica, default: at least ``total_episodes`` in total;
        ``fresh_starts=False`` plays the start states as the wrapper is set. Returns
        ``{tag: {"episode_return", "episode_length", "num_episodes", "return_interval",
        "random_episode_return", "random_return_interval", ...}}``; see
        :func:`warp_drive.training.evaluation.evaluate`.
        """
        from warp_drive.training.evaluation import evaluate

        return evaluate(self, deterministic=deterministic, num_episodes=num_episodes,
                        total_episodes=total_episodes, random_baseline=random_baseline, fresh_starts=fresh_starts)
