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


class Trainer:
    """Trains one model per policy tag on a wrapped env.

    Args:
        env_wrapper: an :class:`~warp_drive.env_wrapper.EnvWrapper` (pycuda or cpu backend).
        config: a :class:`RunConfig`, a dict in the reference YAML format, or a YAML path.
        policy_tag_to_agent_id_map: ``{tag: [agent ids]}``; default: one policy ``shared`` (or the
            config's only tag) over all agents. Agents may be listed in any order.
        results_dir: run directory (default ``basedir/name/tag/<unix time>``).
        model_factory: where model types are looked up (custom models: ``factory.add``).
        device_id, num_devices, verbose: placement and logging.
    """

    def __init__(
        self,
        env_wrapper: Any,
        config: RunConfig | Mapping[str, Any] | str,
        policy_tag_to_agent_id_map: Mapping[str, Sequence[int]] | None = None,
        results_dir: str | None = None,
        model_factory: ModelFactory | None = None,
        device_id: int = 0,
        num_devices: int = 1,
        verbose: bool = True,
        rank: int = 0,
        tensorboard: bool = False,
    ) -> None:
        self.config = config if isinstance(config, RunConfig) else load_run_config(config)
        self.env_wrapper = env_wrapper
        self.verbose = verbose
        self.rank = rank
        self.tensorboard = tensorboard
        self.num_devices = num_devices
        tc = self.config.trainer
        if tc.num_envs != env_wrapper.n_envs:
            raise ConfigError(f"trainer.num_envs={tc.num_envs} but the EnvWrapper holds {env_wrapper.n_envs} envs; make them equal")
        self.steps_per_iter = tc.batch_size_per_env
        self.num_iters = tc.num_iterations(env_wrapper.episode_length)
        self.bootstrap_at_time_limit = self.config.trainer.bootstrap_at_time_limit
        self.deterministic = self.config.sampler.use_argmax
        self.seed = tc.seed if tc.seed is not None else secrets.randbits(31)
        self.rank_seed = (self.seed + 1000 * rank) & 0x7FFFFFFF  # env/sampler streams differ per rank
        self.save_dir = Path(results_dir) if results_dir else Path(self.config.saving.basedir) / self.config.saving.name / self.config.saving.tag / str(int(time.time()))
        if env_wrapper.reset_on_host:
            env_wrapper.reset_all_envs()
        dm = env_wrapper.cuda_data_manager
        self.device = dm.device
        self.obs_names = [Constants.OBSERVATIONS] if dm.is_data_on_device(Constants.OBSERVATIONS) else sorted(
            n for n in dm.names() if n.startswith(Constants.OBSERVATIONS + "_") and not n.endswith(Constants.AT_RESET_SUFFIX))
        self.reset_obs_known = all(n in dm.reset_data_list for n in self.obs_names)
        self._seed_everything(self.seed)  # same initial weights on every rank
        self.sampler = Sampler(env_wrapper.cuda_function_manager)
        self.sampler.init_random(self.rank_seed)
        env_wrapper.init_reset_pool(self.rank_seed + 1)
        pmap = policy_tag_to_agent_id_map or {self.config.policy_tags[0]: list(range(env_wrapper.n_agents))}
        pmap = validate_policy_map(dict(pmap), env_wrapper.n_agents, self.config.policy_tags)
        factory = model_factory or DEFAULT_MODEL_FACTORY
        self.policies = {tag: self._build_policy(tag, ids, factory) for tag, ids in pmap.items()}
        self.iteration = 0
        self.started = False  # envs are force-reset by the first train() call (and by evaluation)
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self.rollout = Rollout(self)
        self.metrics_writer: Any = None
        self.perf = {"training": 0.0, "total": 0.0, "steps": 0}
        self.timer = PhaseTimer(self.device)
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
        ``train(1)`` in a loop trains exactly like one ``train(n)`` call.
        """
        from warp_drive.training.progress import progress_bar

        if not self.started:  # later calls continue the running episodes
            self.env_wrapper.reset_all_envs()
            self._begin_episodes()
            self.started = True
        last = self.iteration + (num_iters if num_iters is not None else self.num_iters - self.iteration)
        metrics: dict[str, float] = {}
        for _ in progress_bar(range(self.iteration, last), enabled=self.verbose and self.rank == 0):
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
            if self._is_log_iteration(last):
                metrics = self.log_metrics(update_metrics)
            if self._is_save_iteration(last):
                self.save_checkpoint()
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
        for p in self.policies.values():
            p.timestep += self.config.trainer.train_batch_size
            if not p.to_train:
                continue
            b, pc = p.buffers, p.config
            sync_buffers(p.algorithm.value_normalizer)  # identical return statistics on every rank
            batch = {"obs": b.obs, "actions": b.actions, "advantages": b.advantages, "returns": b.returns,
                     "old_log_probs": b.log_probs, "old_values": b.values}
            set_optimizer_lr(p.optimizer, p.lr_schedule.get_param_value(p.timestep))
            out[p.tag] = update_policy(
                p.train_model, p.optimizer, p.algorithm, batch, timestep=p.timestep, num_epochs=pc.num_epochs,
                num_minibatches=pc.num_minibatches, max_grad_norm=pc.max_grad_norm if pc.clip_grad_norm else None,
                generator=self.generator)
        return out

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
        if pc.model.model_ckpt_filepath:
            model.load_state_dict(ckpt.load_state_dict_file(pc.model.model_ckpt_filepath, self.device))
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
        example = policy_obs(dm, state, self.obs_names)
        columns = dm.get_shape(action_name)[2]
        action_dtype = dm.data_on_device_via_torch(action_name).dtype
        state.buffers = RolloutBuffers.allocate(self.steps_per_iter, example, len(ids), columns, action_dtype)
        state.stats = EpisodeStats.create(self.env_wrapper.n_envs, len(ids), self.device)
        return state

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
        it = self.iteration + ahead
        return it % self.config.saving.metrics_log_freq == 0 or it == last

    def _is_save_iteration(self, last: int) -> bool:
        it = self.iteration
        return it % self.config.saving.model_params_save_freq == 0 or it == self.num_iters  # every rank saves its part

    # ------------------------------------------------------------------ metrics, checkpoints, eval
    def log_metrics(self, update_metrics: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        """Collect metrics (one host sync), write them, return them as floats."""
        from warp_drive.training.logging_utils import collect_metrics

        return collect_metrics(self, update_metrics)

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Write weights, optimizers, counters and RNG states atomically; return the path."""
        return ckpt.save_trainer(self, path)

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore a checkpoint written by :meth:`save_checkpoint` (to resume training)."""
        ckpt.load_trainer(self, path)

    def evaluate_episodes(self, deterministic: bool = True, num_episodes: int = 1) -> dict[str, dict[str, np.ndarray]]:
        """Roll out ``num_episodes`` episodes per env with the current policies (no training).

        Returns ``{tag: {"episode_return": (E*num_episodes,), "episode_length": ...}}``: per
        episode, the return summed over steps and averaged over the policy's agents.
        """
        from warp_drive.training.evaluation import evaluate

        return evaluate(self, deterministic=deterministic, num_episodes=num_episodes)

    def graceful_close(self) -> None:
        """Flush metric files."""
        if self.metrics_writer is not None:
            self.metrics_writer.close()

    @property
    def env_steps_per_second(self) -> float:
        return self.perf["steps"] / self.perf["total"] if self.perf["total"] else math.nan
