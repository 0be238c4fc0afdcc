"""Trainer: A2C / PPO over GPU-resident rollout batches.

Each iteration rolls out ``B = train_batch_size // num_envs`` steps per env on the device (policy
forward without gradient, in-kernel sampling, env step, reset of done envs: no host sync per step),
then updates every trained policy from the batch, still on the device. The same code runs on the
cpu backend.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from warp_drive.config import RunConfig, load_run_config
from warp_drive.errors import ConfigError
from warp_drive.managers.sampler import Sampler
from warp_drive.training import checkpoint as ckpt
from warp_drive.training.algorithms.ppo import make_algorithm
from warp_drive.training.algorithms.update import update_policy
from warp_drive.training.models.action_spec import action_heads_from_space, obs_dims_from_space
from warp_drive.training.models.factory import ModelFactory
from warp_drive.training.policy_state import (
    EpisodeStats, PolicyState, RolloutBuffers, agent_index, validate_policy_map,
)
from warp_drive.training.cuda_graph import GraphedRollout
from warp_drive.training.distributed import sync_buffers, wrap_model
from warp_drive.training.phase_timer import PhaseTimer
from warp_drive.training.rollout import Rollout, policy_obs
from warp_drive.training.utils.minibatch import index_tree
from warp_drive.training.utils.param_scheduler import ParamScheduler, set_optimizer_lr
from warp_drive.utils.constants import Constants

logger = logging.getLogger(__name__)

DEFAULT_MODEL_FACTORY = ModelFactory()


def _no_mark(phase: str) -> None:
    """Phase marker used when timing is off."""


class _EagerMarker(PhaseTimer):
    """A timer that times nothing: forces the eager rollout path (used while capturing)."""

    def __init__(self) -> None:
        pass

    def start(self, phase: str) -> None:
        pass

    def stop(self) -> None:
        pass


_EAGER = _EagerMarker()

RUN_CONFIG_FILE = "run_config.json"

#: cpu backend: agent-samples (rows x agents) per chunk of a policy forward in the rollout and of
#: the update's forward + backward (gradients accumulated over chunks): activations stay cache-sized
#: instead of growing with the batch (2.75 M samples x 256 floats per layer at the tutorial config).
CPU_CHUNK_SAMPLES = 4096


def _check_placeholder_layout(separate: Any, obs_agent_dim: Any) -> None:
    """Validates 2.7.1's placeholder arguments of the Trainer."""
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
    """``saving.basedir/name/tag/<results_dir>`` (2.7.1's layout; default ``<unix time>``).

    An absolute ``results_dir`` is the run directory itself.
    """
    sv = config.saving
    return Path(sv.basedir) / sv.name / sv.tag / (str(results_dir) if results_dir is not None else str(int(time.time())))


class Trainer:
    """Trains one model per policy tag on a wrapped env.

    The constructor takes WarpDrive 2.7.1's arguments in 2.7.1's order (its ``TrainerA2C``);
    this project's extras are keyword-only.

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
        verbose: log a progress line per metrics row (logger ``warp_drive.training.progress``).
        model_factory: where model types are looked up (custom models: ``factory.add``).
        rank: distributed rank (default ``device_id``).
        tensorboard: also write TensorBoard scalars.

    On the cpu backend every policy forward of the rollout and the update's forward + backward run
    on chunks of about ``cpu_chunk_samples`` agent-samples (attribute, default
    :data:`CPU_CHUNK_SAMPLES`; gradients are accumulated over the chunks), so memory is the rollout
    buffers plus one chunk's activations. On a GPU nothing is chunked.
    """

    #: While :meth:`train` runs in the main thread, SIGINT/SIGTERM stop it at the next iteration
    #: boundary with a checkpoint (:mod:`warp_drive.training.interrupt`); False leaves signals alone.
    handle_signals: bool = True

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
        model_factory: ModelFactory | None = None,
        rank: int | None = None,
        tensorboard: bool = False,
    ) -> None:
        _check_placeholder_layout(create_separate_placeholders_for_each_policy, obs_dim_corresponding_to_num_agents)
        self.config = config if isinstance(config, RunConfig) else load_run_config(config)
        self.env_wrapper = env_wrapper
        self.verbose = verbose
        self.device_id = device_id
        self.rank = device_id if rank is None else rank
        self.tensorboard = tensorboard
        self.num_devices = num_devices
        self.obs_agents_last = obs_dim_corresponding_to_num_agents == "last"
        tc = self.config.trainer
        if tc.num_envs != env_wrapper.n_envs:
            raise ConfigError(f"trainer.num_envs={tc.num_envs} but the EnvWrapper holds {env_wrapper.n_envs} envs; make them equal")
        self.steps_per_iter = tc.batch_size_per_env
        self.num_iters = tc.num_iterations(env_wrapper.episode_length)
        self.bootstrap_at_time_limit = self.config.trainer.bootstrap_at_time_limit
        self.deterministic = self.config.sampler.use_argmax
        self.seed = tc.seed if tc.seed is not None else secrets.randbits(31)
        self.rank_seed = (self.seed + 1000 * self.rank) & 0x7FFFFFFF  # env/sampler streams differ per rank
        self.save_dir = run_directory(self.config, results_dir)
        if env_wrapper.reset_on_host:
            env_wrapper.reset_all_envs()
        dm = env_wrapper.cuda_data_manager
        self.device = dm.device
        self.obs_names = [Constants.OBSERVATIONS] if dm.is_data_on_device(Constants.OBSERVATIONS) else sorted(
            n for n in dm.names() if n.startswith(Constants.OBSERVATIONS + "_") and not n.endswith(Constants.AT_RESET_SUFFIX))
        self.reset_obs_known = all(n in dm.reset_data_list for n in self.obs_names)
        self._check_obs_layout(dm)
        self._seed_everything(self.seed)  # same initial weights on every rank
        self.sampler = Sampler(env_wrapper.cuda_function_manager)
        self.sampler.init_random(self.rank_seed)
        env_wrapper.init_reset_pool(self.rank_seed + 1)
        pmap = policy_tag_to_agent_id_map or {self.config.policy_tags[0]: list(range(env_wrapper.n_agents))}
        pmap = validate_policy_map(dict(pmap), env_wrapper.n_agents, self.config.policy_tags)
        self.policy_tag_to_agent_id_map = pmap
        factory = model_factory or DEFAULT_MODEL_FACTORY
        self.policies = {tag: self._build_policy(tag, ids, factory) for tag, ids in pmap.items()}
        self.load_model_checkpoint()  # the config's model_ckpt_filepath entries, if any
        self.iteration = 0
        self.started = False  # envs are force-reset by the first train() call (and by evaluation)
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.cpu_chunk_samples = CPU_CHUNK_SAMPLES
        self.rollout = Rollout(self)
        self.metrics_writer: Any = None
        self.perf = {"training": 0.0, "total": 0.0, "steps": 0}
        self.timer = PhaseTimer(self.device)
        self.phase_seconds: dict[str, float] = {}  # rollout phases summed over the timed iterations
        self.timed_iterations = 0
        self.graphed_rollout: GraphedRollout | None = None
        if tc.use_cuda_graph:
            if self.device.type != "cuda":
                logger.debug("trainer.use_cuda_graph applies to the pycuda backend; running eagerly on %s", self.device)
            else:
                self.graphed_rollout = GraphedRollout(lambda: self.generate_rollout(_EAGER), env_wrapper.cuda_function_manager)
        if tc.tf32 and self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True

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
            TrainingInterrupted: SIGINT or SIGTERM arrived (main thread, ``handle_signals``): the
                iteration in progress was finished and a checkpoint written first.
        """
        from warp_drive.training.interrupt import StopRequest, TrainingInterrupted, agree_across_ranks
        from warp_drive.training.progress import ProgressLine

        if not self.started:  # later calls continue the running episodes
            self.env_wrapper.reset_all_envs()
            self._begin_episodes()
            self.started = True
        self._write_run_config()
        last = self.iteration + (num_iters if num_iters is not None else self.num_iters - self.iteration)
        if getattr(self, "_last_checkpoint_time", None) is None:
            self._last_checkpoint_time = time.monotonic()
        every_s = self.config.saving.checkpoint_every_seconds
        progress = ProgressLine(last, self.policies, enabled=self.verbose and self.rank == 0)
        metrics: dict[str, float] = {}
        with StopRequest(enabled=self.handle_signals) as stop:
            while self.iteration < last:
                # per-phase timing needs eager launches: with CUDA graphs the rollout replays as one unit
                # (set trainer.use_cuda_graph=false, or use benchmarks/bench_end_to_end.py, for the split)
                timing = self.graphed_rollout is None and self._is_log_iteration(last, ahead=1)
                timer = self.timer if timing else None
                start = time.perf_counter()
                last_values = self.generate_rollout(timer)
                t_rollout = time.perf_counter()
                if timer is not None:
                    timer.start("training")
                update_metrics = self.update(last_values)
                if timer is not None:
                    timer.stop()
                self.iteration += 1
                self._account_time(start, t_rollout)
                # ---- iteration boundary: metrics, then checkpoints, then a requested stop
                if self._is_log_iteration(last):
                    if self.config.trainer.evaluator:
                        self._add_test_metrics(update_metrics)
                    metrics = self.log_metrics(update_metrics)
                    progress(self.iteration, metrics)
                timed = every_s > 0 and time.monotonic() - self._last_checkpoint_time >= every_s
                signum, timed = agree_across_ranks([stop.signum or 0, int(timed)], self.device)  # ranks act together
                path = self.save_checkpoint() if signum or timed or self._is_save_iteration(last) else None
                if signum:
                    raise TrainingInterrupted(signum, self.iteration, path if self.rank == 0 else None)
        return metrics

    def generate_rollout(self, timer: PhaseTimer | None = None) -> dict[str, torch.Tensor]:
        """Fill every policy's buffers with ``steps_per_iter`` env steps (no host sync).

        Returns ``{tag: V(s_B)}``, the values of the observations after the last step.
        """
        if self.graphed_rollout is not None and timer is None:
            return self.graphed_rollout()
        mark = timer.start if timer is not None else _no_mark
        mark("policy")
        self.rollout.begin()
        for step in range(self.steps_per_iter):
            mark("sampling")
            self.rollout.record_obs(step)
            self.rollout.sample(step)
            mark("env_step")
            self.env_wrapper.step_all_envs()
            mark("policy")
            done, next_out = self.rollout.after_step(step)
            mark("env_step")
            self.rollout.advance(done, next_out)
        mark("policy")
        self.rollout.finalize()
        if timer is not None:
            timer.stop()
        return dict(self.rollout.values)

    def update(self, last_values: dict[str, torch.Tensor] | None = None) -> dict[str, dict[str, torch.Tensor]]:
        """One update (epochs x minibatches) of every trained policy from the current buffers.

        Advantages and returns were computed at the end of the rollout (:meth:`Rollout.finalize`);
        ``last_values`` is accepted for API symmetry with :meth:`generate_rollout`.
        """
        out = {}
        envs = self._env_subset() if self.config.trainer.neg_pos_env_ratio > 0 else None
        for p in self.policies.values():
            p.timestep += self.config.trainer.train_batch_size
            if not p.to_train:
                continue
            b, pc = p.buffers, p.config
            sync_buffers(p.algorithm.value_normalizer)  # identical return statistics on every rank
            batch = {"obs": b.obs, "actions": b.actions, "advantages": b.advantages, "returns": b.returns,
                     "old_log_probs": b.log_probs, "old_values": b.values}
            if envs is not None:
                batch = index_tree(batch, envs, dim=1)
            set_optimizer_lr(p.optimizer, p.lr_schedule.get_param_value(p.timestep))
            out[p.tag] = update_policy(
                p.train_model, p.optimizer, p.algorithm, batch, timestep=p.timestep, num_epochs=pc.num_epochs,
                num_minibatches=pc.num_minibatches, max_grad_norm=pc.max_grad_norm if pc.clip_grad_norm else None,
                generator=self.generator, chunk_rows=self.cpu_chunk_rows(p.num_agents))
        return out

    def cpu_chunk_rows(self, num_agents: int) -> int | None:
        """Rows per chunk of a policy of ``num_agents`` agents on the cpu backend (envs per rollout
        forward, (time, env) samples per update chunk; ``cpu_chunk_samples`` agent-samples); None
        on a GPU, which runs every forward and backward whole."""
        if self.device.type != "cpu":
            return None
        return max(1, int(self.cpu_chunk_samples) // max(1, num_agents))

    # ------------------------------------------------------------------ set-up helpers
    def _build_policy(self, tag: str, ids: list[int], factory: ModelFactory) -> PolicyState:
        env, dm = self.env_wrapper.env, self.env_wrapper.cuda_data_manager
        pc = self.config.policy[tag]
        spaces_ = {type(env.action_space[a]).__name__ + str(getattr(env.action_space[a], "shape", "")) for a in ids}
        if len(spaces_) > 1:
            raise ConfigError(f"policy '{tag}' mixes agents with different action spaces: {sorted(spaces_)}")
        action_spec = action_heads_from_space(env.action_space[ids[0]])
        obs_space = env.observation_space[ids[0]]
        model = factory.build(pc.model, obs_dims_from_space(obs_space), action_spec).to(self.device)
        idx = agent_index(ids, self.device)
        contiguous = ids == list(range(self.env_wrapper.n_agents))
        action_name = Constants.ACTIONS
        if not contiguous:
            action_name = f"{Constants.ACTIONS}_{tag}"
            E, _, heads = dm.get_shape(Constants.ACTIONS)
            dtype = np.dtype(dm.get_dtype(Constants.ACTIONS))
            dm.push_data_to_device({action_name: np.zeros((E, len(ids), heads), dtype)}, torch_accessible=True)
        self.sampler.register_actions(dm, action_name, max(action_spec.categorical or (1,)), is_deterministic=action_spec.is_gaussian)
        lr = ParamScheduler(pc.lr, "lr")
        state = PolicyState(tag, ids, idx, contiguous, model, torch.optim.Adam(model.parameters(), lr=lr.get_param_value(0)),
                            make_algorithm(pc).to(self.device), action_spec, action_name, pc, pc.to_train, lr_schedule=lr)
        state.train_model = wrap_model(model, self.device)  # DDP across ranks; rollouts use `model`
        state.obs_agents_last = self.obs_agents_last
        example = policy_obs(dm, state, self.obs_names)
        columns = dm.get_shape(action_name)[2]
        action_dtype = dm.data_on_device_via_torch(action_name).dtype
        state.buffers = RolloutBuffers.allocate(self.steps_per_iter, example, len(ids), columns, action_dtype)
        state.stats = EpisodeStats.create(self.env_wrapper.n_envs, len(ids), self.device)
        return state

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

    def _begin_episodes(self) -> None:
        for p in self.policies.values():
            p.stats.reset_running()

    def _seed_everything(self, seed: int) -> None:
        torch.manual_seed(seed)  # model initialisation and minibatch shuffles; envs and sampler use Philox

    def _account_time(self, start: float, t_rollout: float) -> None:
        now = time.perf_counter()
        self.perf["rollout"] = self.perf.get("rollout", 0.0) + (t_rollout - start)
        self.perf["training"] += now - t_rollout
        self.perf["total"] += now - start
        self.perf["steps"] += self.config.trainer.train_batch_size

    def _is_log_iteration(self, last: int, ahead: int = 0) -> bool:
        """The first iteration, every ``metrics_log_freq``, at least every tenth of the run, and the last.

        A function of the iteration only, so a resumed run logs the rows an uninterrupted one does.
        """
        from warp_drive.training.progress import progress_every

        it = self.iteration + ahead
        return it == 1 or it == last or it % self.config.saving.metrics_log_freq == 0 or it % progress_every(self.num_iters) == 0

    def _is_save_iteration(self, last: int) -> bool:
        it = self.iteration
        return it % self.config.saving.model_params_save_freq == 0 or it == self.num_iters  # every rank saves its part

    # ------------------------------------------------------------------ metrics, checkpoints, eval
    def log_metrics(self, update_metrics: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        """Collect metrics (one host sync), write them, return them as floats."""
        from warp_drive.training.logging_utils import collect_metrics

        return collect_metrics(self, update_metrics)

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Write weights, optimizers, counters and RNG states atomically; return the path.

        Also writes every policy's ``<tag>_<timestep>.state_dict`` (2.7.1's file).
        """
        return ckpt.save_trainer(self, path)

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore a checkpoint written by :meth:`save_checkpoint` (to resume training)."""
        ckpt.load_trainer(self, path)

    def save_model_checkpoint(self, iteration: int = 0) -> list[Path]:
        """2.7.1's weight files: ``<save_dir>/<tag>_<timestep>.state_dict`` for every policy.

        As in 2.7.1, only on iterations where ``iteration % saving.model_params_save_freq == 0`` or
        the last one (``num_iters - 1``), and only on rank 0. Fully connected categorical policies
        are written with 2.7.1's parameter names (2.7.1 loads them), other models with their own.

        Returns:
            The files written (empty when this iteration does not save).
        """
        freq = self.config.saving.model_params_save_freq
        if self.rank != 0 or not (iteration % freq == 0 or iteration == self.num_iters - 1):
            return []
        paths = ckpt.write_policy_files(self)
        for path in paths:
            logger.info("policy weights written: %s", path)
        return paths

    def load_model_checkpoint(self, ckpts_dict: Mapping[str, str | Path] | None = None) -> None:
        """Load policy weights: ``{tag: path}``, or (None) each policy's ``model.model_ckpt_filepath``.

        Files may be 2.7.1's ``.state_dict`` files (its parameter names) or ours; they are read with
        ``torch.load(weights_only=True)``. As in 2.7.1, a policy's timestep (which drives its
        schedules) is taken from the file name ``<tag>_<timestep>.state_dict`` when it has one.

        Raises:
            ConfigError: an unknown policy tag, a missing or unreadable file, or weights that do not
                fit the policy's model (the message lists the mismatching names).
        """
        if ckpts_dict is None:
            ckpts = {tag: p.config.model.model_ckpt_filepath for tag, p in self.policies.items()}
        elif isinstance(ckpts_dict, Mapping):
            ckpts = dict(ckpts_dict)
        else:
            raise ConfigError(f"ckpts_dict must map policy tags to file paths; got {type(ckpts_dict).__name__}")
        for tag, path in ckpts.items():
            if tag not in self.policies:
                raise ConfigError(f"checkpoint for unknown policy {tag!r}; policies: {', '.join(self.policies)}")
            if not path:
                continue
            state = ckpt.load_state_dict_file(path, self.device)
            model = getattr(self.policies[tag].model, "module", self.policies[tag].model)
            try:
                model.load_state_dict(state)
            except RuntimeError as err:
                raise ConfigError(f"{path} does not fit policy '{tag}' ({type(model).__name__}): {err}") from err
            timestep = ckpt.timestep_from_filename(path)
            if timestep is not None:
                self.policies[tag].timestep = timestep
            logger.info("policy '%s' loaded from %s (timestep %s)", tag, path, self.policies[tag].timestep)

    def evaluate(self, deterministic: bool = True, num_episodes: int = 1) -> dict[str, dict[str, np.ndarray]]:
        """Roll out ``num_episodes`` episodes per env with the current policies (no training).

        Returns ``{tag: {"episode_return": (E*num_episodes,), "episode_length": ...}}``: per
        episode, the return summed over steps and averaged over the policy's agents.
        """
        from warp_drive.training.evaluation import evaluate

        return evaluate(self, deterministic=deterministic, num_episodes=num_episodes)

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

    def graceful_close(self) -> None:
        """Flush metric files."""
        if self.metrics_writer is not None:
            self.metrics_writer.close()
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
        """``{tag: model}``."""
        return {tag: p.model for tag, p in self.policies.items()}

    @property
    def current_timestep(self) -> dict[str, int]:
        """``{tag: env steps trained on}`` (drives the schedules)."""
        return {tag: p.timestep for tag, p in self.policies.items()}

    @property
    def perf_stats(self) -> Any:
        """2.7.1's :class:`~warp_drive.training.reporting.PerfStats` from this run's counters."""
        from warp_drive.training.reporting import PerfStats

        iters = self.iteration
        mean = lambda phase: self.phase_seconds.get(phase, 0.0) / self.timed_iterations if self.timed_iterations else 0.0  # noqa: E731
        return PerfStats(iters=iters, steps=int(self.perf["steps"]), policy_eval_time=mean("policy") * iters,
                         action_sample_time=mean("sampling") * iters, env_step_time=mean("env_step") * iters,
                         training_time=self.perf["training"], total_time=self.perf["total"])

    @property
    def env_steps_per_second(self) -> float:
        return self.perf["steps"] / self.perf["total"] if self.perf["total"] else math.nan

    # ------------------------------------------------------------------ helpers of train() and update()
    def _write_run_config(self) -> None:
        """Append the run config as one JSON line to ``run_config.json`` (once; rank 0)."""
        if self.rank != 0 or getattr(self, "_run_config_written", False):
            return
        import json

        self.save_dir.mkdir(parents=True, exist_ok=True)
        with open(self.save_dir / RUN_CONFIG_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(self.config.to_dict()) + "\n")
        self._run_config_written = True

    def _add_test_metrics(self, update_metrics: dict[str, dict[str, torch.Tensor]]) -> None:
        """``trainer.evaluator``: one greedy episode per env, logged as ``<tag>/test_episode_*``."""
        returns, lengths = self.evaluate_episodes(use_argmax=True)
        for tag in self.policies:
            m = update_metrics.setdefault(tag, {})
            m["test_episode_return_mean"] = torch.tensor(float(returns[tag].mean()), device=self.device)
            m["test_episode_length_mean"] = torch.tensor(float(lengths[tag].mean()), device=self.device)

    def _env_subset(self) -> torch.Tensor | None:
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
