"""The training engine: a run's env replicas, sampler, policies and rollout buffers behind one API.

Every driver of a run goes through the same few calls: the :class:`~warp_drive.training.run.trainer.Trainer` and
the Lightning module (:mod:`warp_drive.training.lightning`). One iteration, whoever drives it::

    batches = engine.collect()                 # one on-device rollout -> {tag: training batch}
    metrics = engine.update_policies(batches)  # every trained policy's gradient steps
    engine.end_iteration()                     # the per-iteration bookkeeping, in one place

:meth:`Engine.state_dict` / :meth:`Engine.load_state_dict` hold everything a resume needs;
:meth:`Engine.evaluation_episodes` plays episodes without training. Other modules read an engine
through its attributes and change it only through its methods. The engine imports no driver
(checkpoints, evaluation, command lines) and speaks no 2.7.1: its constructor takes a run config,
an env wrapper and the policy map.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch

from warp_drive.config import RunConfig, load_run_config
from warp_drive.errors import ConfigError, UsageError
from warp_drive.services.numba_services import service_manager
from warp_drive.training.carried_state import carried_state_entry, load_carried_states, reset_carried_states
from warp_drive.training.engine.counters import RunCounters
from warp_drive.training.distributed import sync_each, unwrap, wrap_model
from warp_drive.training.engine.env_subset import env_subset
from warp_drive.training.models.factory import ModelFactory
from warp_drive.training.engine.phase_timer import EAGER, PhaseTimer
from warp_drive.training.policy_state import validate_policy_map
from warp_drive.training.engine.update_memory import auto_chunk_samples

logger = logging.getLogger(__name__)

Tensor = torch.Tensor
#: ``{policy tag: batch}``: what :meth:`Engine.collect` returns (each policy's :meth:`~warp_drive.training.algorithms.base.Policy.batch`)
PolicyBatches = dict[str, Any]
#: ``clip_gradients(optimizer, max_norm or None)``: Lightning's clipping instead of the engine's.
ClipHook = Callable[[Any, "float | None"], None]

#: Where model types are looked up unless an engine gets its own ``model_factory`` (custom models:
#: ``DEFAULT_MODEL_FACTORY.add``).
DEFAULT_MODEL_FACTORY = ModelFactory()

#: cpu backend: agent-samples (rows x agents) per chunk of a policy forward in the rollout and of the update's
#: forward + backward (gradients accumulated over chunks): activations stay cache-sized, whatever the batch.
CPU_CHUNK_SAMPLES = 4096


def rank_seed_of(seed: int, rank: int) -> int:
    """The env and sampler seed of ``rank``: the streams differ per rank, the weights do not."""
    return (seed + 1000 * rank) & 0x7FFFFFFF


class Engine:
    """Every policy's algorithm over GPU-resident rollouts: one policy object per tag, built by its
    algorithm's registry entry (:mod:`warp_drive.config.algorithms`: A2C, PPO, DDPG, ...) and driven
    through the hooks of :class:`~warp_drive.training.algorithms.base.Policy`; the engine names no
    algorithm.

    Each iteration rolls out ``B = train_batch_size // num_envs`` steps per env on the device (no host sync
    per step), then updates every trained policy, still on the device. Forwards and backwards run in chunks:
    of ``cpu_chunk_samples`` agent-samples on the cpu backend (attribute, default :data:`CPU_CHUNK_SAMPLES`),
    on a GPU only when an update's activations would not fit (:meth:`update_chunk_rows`).

    Args:
        env_wrapper: an :class:`~warp_drive.env_wrapper.EnvWrapper` (pycuda or cpu backend).
        config: a :class:`RunConfig`, a dict in the run-config layout or a YAML path.
        policy_map: ``{tag: [agent ids]}``; default: the config's first tag over all agents.
        rank, world_size: this process's rank among ``world_size`` training together (DDP).
        obs_agents_last: observation placeholders are ``(E, *features, N)``, not ``(E, N, *features)``.
        model_factory: where model types are looked up (default :data:`DEFAULT_MODEL_FACTORY`).
    """

    def __init__(self, env_wrapper: Any, config: RunConfig | Mapping[str, Any] | str,
                 policy_map: Mapping[str, Sequence[int]] | None = None, *, rank: int = 0, world_size: int = 1,
                 obs_agents_last: bool = False, model_factory: Any = None) -> None:
        if env_wrapper is None:
            raise ConfigError(f"{type(self).__name__} needs an env_wrapper (an EnvWrapper around the env)")
        self.config = config if isinstance(config, RunConfig) else load_run_config(config)
        tc = self.config.trainer
        if tc.num_envs != env_wrapper.n_envs:
            raise ConfigError(f"trainer.num_envs={tc.num_envs} but the EnvWrapper holds {env_wrapper.n_envs} envs; make them equal")
        self.env_wrapper = env_wrapper
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.obs_agents_last = bool(obs_agents_last)
        self.steps_per_iter = tc.batch_size_per_env
        self.bootstrap_at_time_limit = tc.bootstrap_at_time_limit
        self.seed = tc.seed if tc.seed is not None else secrets.randbits(31)
        self.rank_seed = rank_seed_of(self.seed, self.rank)
        if env_wrapper.reset_on_host:
            env_wrapper.reset_all_envs()
        self.device = env_wrapper.cuda_data_manager.device
        self.started = False  # envs are force-reset before the first iteration (and by evaluation)
        self.counters = RunCounters(self.device, tc.train_batch_size)
        pmap = policy_map or {self.config.policy_tags[0]: list(range(env_wrapper.n_agents))}
        self.policy_tag_to_agent_id_map = validate_policy_map(dict(pmap), env_wrapper.n_agents, self.config.policy_tags)
        self.policies: dict[str, Any] = {}
        self._build(model_factory)

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
        reset_carried_states(self.policies.values())
        self.started = True

    def end_iteration(self, since: float | None = None) -> None:
        """The per-iteration bookkeeping (see :meth:`RunCounters.end_iteration`)."""
        self.counters.end_iteration(since)

    @property
    def iteration(self) -> int:
        """Training iterations done."""
        return self.counters.iteration

    @property
    def num_iters(self) -> int:
        """Training iterations of the run config (``trainer.num_episodes * episode_length // train_batch_size``)."""
        return self.config.trainer.num_iterations(self.env_wrapper.episode_length)

    @property
    def perf(self) -> dict[str, float]:
        """Counters: ``rollout``, ``training``, ``total`` seconds and env ``steps`` (the engine updates them)."""
        return self.counters.perf

    @property
    def timer(self) -> PhaseTimer:
        """The phase timer of the rollout and update (see :meth:`RunCounters.take_phase_times`)."""
        return self.counters.timer

    def _build(self, model_factory: Any) -> None:
        from warp_drive.services.sampler import Sampler
        from warp_drive.training.engine.cuda_graph import GraphedRollout
        from warp_drive.training.engine.rollout import Rollout, RolloutSpec
        from warp_drive.vocab.constants import Constants

        dm = self.env_wrapper.cuda_data_manager
        self.obs_names = [Constants.OBSERVATIONS] if dm.is_data_on_device(Constants.OBSERVATIONS) else sorted(
            n for n in dm.names() if n.startswith(Constants.OBSERVATIONS + "_") and not n.endswith(Constants.AT_RESET_SUFFIX))
        # a reset restores the saved observations, unless fresh start states draw new ones
        self.reset_obs_known = (all(n in dm.reset_data_list for n in self.obs_names)
                                and not self.env_wrapper.fresh_start_states)
        self._check_obs_layout(dm)
        torch.manual_seed(self.seed)  # same initial weights on every rank; envs and sampler use Philox
        self.env_wrapper.init_reset_pool(self.rank_seed + 1)  # per-rank reset-pool stream
        self.sampler = Sampler(service_manager(self.env_wrapper.cuda_function_manager))  # numba: its CUDA C services
        self.sampler.init_random(self.rank_seed)
        factory = model_factory or DEFAULT_MODEL_FACTORY
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.policies = {tag: self._build_policy(tag, ids, factory) for tag, ids in self.policy_tag_to_agent_id_map.items()}
        self.cpu_chunk_samples = CPU_CHUNK_SAMPLES
        self.update_chunk_samples: int | None = None  # GPU update chunks; None: sized automatically
        self._auto_chunk_samples: dict[str, int | None] = {}  # per policy, at its first update (update_chunk_rows)
        tc = self.config.trainer
        self.rollout = Rollout(RolloutSpec(self.env_wrapper, self.policies, self.sampler, self.obs_names, self.steps_per_iter,
                                           self.reset_obs_known, self.bootstrap_at_time_limit, self.cpu_chunk_rows,
                                           torch.bfloat16 if tc.rollout_precision == "bf16" else None, tc.compile),
                               greedy=self.config.sampler.use_argmax)
        self._collected = False
        self.graphed_rollout: GraphedRollout | None = None
        eager_only = [p.tag for p in self.policies.values() if not p.captures_in_cuda_graph]
        if tc.use_cuda_graph:
            if self.device.type != "cuda":
                logger.debug("trainer.use_cuda_graph applies to a GPU backend; running eagerly on %s", self.device)
            elif eager_only:
                logger.info("trainer.use_cuda_graph: policies %s act with host-side parameters a CUDA graph would "
                            "freeze; the rollout runs eagerly", eager_only)
            else:
                self.graphed_rollout = GraphedRollout(lambda: self.generate_rollout(EAGER),
                                                      self.env_wrapper.cuda_function_manager)
        if tc.tf32 and self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        #: autocast dtype of the update's forward and backward (``trainer.update_precision``), or None
        self.update_autocast_dtype = torch.bfloat16 if tc.update_precision == "bf16" else None

    def _build_policy(self, tag: str, ids: list[int], factory: Any) -> Any:
        """The policy of ``tag``, built by its algorithm's registry entry (:mod:`warp_drive.config.algorithms`)."""
        from warp_drive.config.algorithms import algorithm_entry
        from warp_drive.training.algorithms.base import BuildContext, check_policy
        from warp_drive.training.engine.acting import policy_obs

        pc = self.config.policy[tag]
        dm = self.env_wrapper.cuda_data_manager
        ctx = BuildContext(tag, list(ids), pc, self.config, self.env_wrapper.env, dm, self.sampler, self.obs_names,
                           self.steps_per_iter, self.env_wrapper.n_envs, self.env_wrapper.n_agents, self.device,
                           self.generator, factory, self.obs_agents_last,
                           lambda module: wrap_model(module, self.device),
                           lambda policy: policy_obs(dm, policy, self.obs_names))
        entry = algorithm_entry(pc.algorithm, f"policy.{tag}.algorithm")
        return check_policy(entry.policy_builder()(ctx), entry.name)

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
        phases; the rollout then runs eagerly even with a CUDA graph. Returns :meth:`batches`.
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
        kept (:func:`~warp_drive.training.engine.env_subset.env_subset`, one host sync).

        Shapes:
            obs: ``(B, E, A, *obs)`` (or a dict of those); actions: (B, E, A, columns);
            advantages, returns, old_log_probs, old_values: (B, E, A).
        """
        from warp_drive.training.buffers import batch_env_subset

        ratio = self.config.trainer.neg_pos_env_ratio
        envs = env_subset(self.rollout.shared.envs_ending(2), ratio, self._minibatch_rows(), self.generator) if ratio > 0 else None
        out: PolicyBatches = {}
        for p in self.policies.values():
            if not p.to_train:
                continue
            batch = p.batch()
            out[p.tag] = batch if envs is None or not p.batch_has_env_axis else batch_env_subset(batch, envs)
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
        advances by ``train_batch_size``. The hooks let a driver such as Lightning take over parts
        of each gradient step.

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
            (sync_normalizers or sync_each)([n for p in trained for n in p.running_statistics()])  # same statistics on every rank
            for p in trained:
                given = None if optimizers is None else optimizers.get(p.tag, {})  # {}: a policy with no optimizer
                context = UpdateContext(
                    self.generator, self.config.trainer.train_batch_size,
                    optimizers=given if given is None or isinstance(given, Mapping) else dict.fromkeys(p.optimizers(), given),
                    backward=backward, clip_gradients=clip_gradients, track_grad_norm=track_grad_norm,
                    chunk_rows=self.update_chunk_rows(p), autocast_dtype=self.update_autocast_dtype,
                    cuda_graph=self.config.trainer.use_cuda_graph and self.device.type == "cuda",
                    compile=self.config.trainer.compile)
                out[p.tag] = p.update(batches[p.tag], context)
            if timer is not None:
                timer.stop()
        return out

    def _minibatch_rows(self) -> list[tuple[int, int]]:
        """``(rows per env, num_minibatches)`` of every trained policy whose batch has an env axis."""
        return [(p.num_agents if p.carried is not None else self.steps_per_iter * p.num_agents, p.config.num_minibatches)
                for p in self.policies.values() if p.to_train and p.batch_has_env_axis]  # recurrent: A sequences per env

    def cpu_chunk_rows(self, num_agents: int) -> int | None:
        """cpu backend: rows (envs per rollout forward, (time, env) samples per update chunk) of
        ``cpu_chunk_samples`` agent-samples for a policy of ``num_agents`` agents; None on a GPU."""
        return None if self.device.type != "cpu" else max(1, int(self.cpu_chunk_samples) // max(1, num_agents))

    def update_chunk_rows(self, p: Any) -> int | None:
        """Rows per forward + backward chunk of policy ``p``'s update: the cpu chunks, or on a GPU
        ``update_chunk_samples`` agent-samples (None: sized from the model and the available memory by
        :func:`~warp_drive.training.engine.update_memory.auto_chunk_samples` at the policy's first update, then
        kept; a minibatch that fits runs whole)."""
        if self.device.type == "cpu":
            return self.cpu_chunk_rows(p.num_agents)
        samples = self.update_chunk_samples
        if samples is None:  # sized once per policy: the same shapes every iteration
            if p.tag not in self._auto_chunk_samples:
                self._auto_chunk_samples[p.tag] = auto_chunk_samples(unwrap(p.model), self.device)
            samples = self._auto_chunk_samples[p.tag]
        return None if samples is None else max(1, int(samples) // max(1, p.num_agents))

    def use_local_gradients(self) -> None:
        """Train the models themselves, not their DistributedDataParallel wrappers (a driver such
        as Lightning's DDP strategy all-reduces the gradients itself)."""
        for p in self.policies.values():
            p.use_local_gradients()

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
        """Force-reset every env (and carried states) and play with greedy (or sampled) actions; on exit restore
        the sampling mode and force-reset again, so training continues from fresh episodes.

        Yields:
            The :class:`~warp_drive.training.engine.rollout.Rollout` to step (its policy outputs are
            those of the reset observations).
        """
        saved = self.rollout.set_greedy(greedy)
        try:
            self.env_wrapper.reset_all_envs()
            reset_carried_states(self.policies.values())
            self.rollout.begin()
            yield self.rollout
        finally:
            self.rollout.set_greedy(saved)
            self.restart_episodes()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything a resume needs, as plain data (tensors, numbers, strings, containers).

        Keys: ``format_version``, ``iteration``, ``seed``, ``world_size``, ``config``,
        ``policies`` (``{tag: {model, optimizer, algorithm, timestep, agent_ids}}``), ``sampler``,
        ``rank_state`` (:meth:`rank_state_dict`), ``rng`` and ``perf``
        (:mod:`warp_drive.training.run.checkpoint` writes and reads it).
        """
        from warp_drive.training.checkpoint_files import FORMAT_VERSION

        return {
            "format_version": FORMAT_VERSION,
            "iteration": self.iteration,
            "seed": self.seed,
            "world_size": self.world_size,
            "config": self.config.to_dict(),
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
        """What differs between ranks: env replicas, reset-pool and sampler counters, episode statistics, carried states."""
        return {
            "sampler_counters": self.sampler.counters_state(),
            # the env replicas themselves, so a resumed run continues the same episodes
            "data_store": self.env_wrapper.cuda_data_manager.state_dict(),
            "env_resetter": self.env_wrapper.env_resetter.state_dict(),
            "episode_carry": {tag: [p.stats.running_return, p.stats.running_length] for tag, p in self.policies.items()},
            # episodes completed since the last metrics row (a checkpoint between logging iterations)
            "episode_sums": {tag: [p.stats.return_sum, p.stats.length_sum, p.stats.count] for tag, p in self.policies.items()},
            "started": self.started,
            **carried_state_entry(self.policies.values()),  # recurrent policies only
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
        load_carried_states(self.policies, rank_state.get("carried_state"))
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

