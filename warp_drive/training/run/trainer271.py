"""WarpDrive 2.7.1's trainer: :class:`Trainer271`, the :class:`~warp_drive.training.run.trainer.Trainer` with 2.7.1's names.

The one class behind 2.7.1's import paths (``warp_drive.training.trainer.Trainer``,
``trainers.trainer_a2c.TrainerA2C``, ``trainers.trainer_base.TrainerBase``, ``deprecate.trainer.Trainer``;
``trainers.trainer_ddpg.TrainerDDPG`` is it with DDPG policies only). 2.7.1 code reads these names
(``cuda_envs``, ``models``, ``current_timestep``, ``perf_stats``, the engine's attributes such as
``policies`` and ``iteration`` on the trainer itself, DDPG's ``actor_models``, ...) and calls these methods
(``generate_rollout``, ``update``, ``evaluate_episodes``, ``fetch_episode_states``, ``load_model_checkpoint``,
the ``<tag>_<timestep>.state_dict`` weight files); none of them is the plain Trainer's, which holds
its :class:`~warp_drive.training.engine.Engine` as ``engine`` and forwards nothing. The checkpoints
2.7.1's ``TrainerDDPG`` wrote here before DDPG joined the one loop (format ``"ddpg-1"``) still load.

Nothing but the 2.7.1 paths uses this class: :func:`~warp_drive.training.run.build.build_trainer`
returns the plain Trainer, and Lightning and the command lines use the plain Trainer and the engine.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from warp_drive.errors import ConfigError
from warp_drive.training import checkpoint_files
from warp_drive.training.algorithms.ddpg import hard_update, soft_update  # noqa: F401  (2.7.1's names)
from warp_drive.training.checkpoint_files import safe_load
from warp_drive.training.run.checkpoint_check import DDPG_LEGACY, check_contents
from warp_drive.training.run.evaluation import evaluate_per_agent, fetch_episode_states, greedy_from_sample_params
from warp_drive.training.run.reporting import PerfStats
from warp_drive.training.run.trainer import Trainer

logger = logging.getLogger(__name__)

#: the format tag of the checkpoints TrainerDDPG wrote before DDPG joined the one training loop
LEGACY_FORMAT = DDPG_LEGACY
#: ``evaluate_episodes`` keywords of a DDPG trainer (2.7.1's OU parameters and ``use_argmax``)
SAMPLE_PARAMS = ("damping", "stddev", "scale", "use_argmax")


def _engine_attr(name: str, doc: str, settable: bool = False) -> property:
    """A 2.7.1 trainer attribute that is the engine's ``name`` (read, and written when ``settable``)."""
    def get(self: Any) -> Any:
        return getattr(self.engine, name)

    def put(self: Any, value: Any) -> None:
        setattr(self.engine, name, value)

    return property(get, put if settable else None, doc=doc)


def _engine_method(name: str) -> Any:
    """A 2.7.1 trainer method that calls the engine's ``name`` (a function, so an instance may replace it)."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.engine, name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f":meth:`Engine.{name} <warp_drive.training.engine.Engine.{name}>`."
    return method


class Trainer271(Trainer):
    """WarpDrive 2.7.1's trainer (its ``TrainerA2C`` / ``Trainer``; same constructor arguments, names and
    methods): the plain :class:`~warp_drive.training.run.trainer.Trainer` plus 2.7.1's surface.

    Args: those of :class:`~warp_drive.training.run.trainer.Trainer`.
    """

    #: only policies of this algorithm (2.7.1's ``TrainerDDPG``: ``"DDPG"``); None: any
    only_algorithm: str | None = None

    @functools.wraps(Trainer.__init__)  # 2.7.1's constructor signature, as the plain Trainer's
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.only_algorithm is not None:
            other = [tag for tag, p in self.config.policy.items() if p.algorithm != self.only_algorithm]
            if other:
                raise ConfigError(
                    f"policies {other} are not {self.only_algorithm} ({self.config.policy[other[0]].algorithm}); "
                    "train them with warp_drive.training.trainer.Trainer (it trains every algorithm)")

    # ------------------------------------------------------------------ the engine's, read on the trainer (2.7.1 style)
    config = _engine_attr("config", "The run config (:class:`~warp_drive.config.RunConfig`).")
    env_wrapper = _engine_attr("env_wrapper", "The env wrapper.")
    device = _engine_attr("device", "Where the run's tensors live.")
    policies = _engine_attr("policies", "``{tag: policy}`` (:class:`~warp_drive.training.algorithms.base.Policy`).")
    policy_tag_to_agent_id_map = _engine_attr("policy_tag_to_agent_id_map", "``{tag: [agent ids]}``.")
    iteration = _engine_attr("iteration", "Training iterations done.")
    perf = _engine_attr("perf", "Counters: ``rollout``, ``training``, ``total`` seconds and env ``steps``.")
    counters = _engine_attr("counters", "The run's :class:`~warp_drive.training.engine.counters.RunCounters`.")
    timer = _engine_attr("timer", "The phase timer of the rollout and update.")
    seed = _engine_attr("seed", "The run's seed.")
    started = _engine_attr("started", "Episodes were started (envs force-reset) for training.")
    steps_per_iter = _engine_attr("steps_per_iter", "Env steps per env per iteration.")
    obs_agents_last = _engine_attr("obs_agents_last", "Observation placeholders are ``(E, *features, N)``.")
    bootstrap_at_time_limit = _engine_attr("bootstrap_at_time_limit", "Time-limit truncations bootstrap.")
    sampler = _engine_attr("sampler", "The action sampler.")
    rollout = _engine_attr("rollout", "The on-device rollout.")
    graphed_rollout = _engine_attr("graphed_rollout", "The rollout's CUDA graph, or None.")
    generator = _engine_attr("generator", "The torch generator of minibatch shuffles.")
    obs_names = _engine_attr("obs_names", "The observation placeholders the policies read.")
    reset_obs_known = _engine_attr("reset_obs_known", "A reset restores saved observations (no fresh draws).")
    update_autocast_dtype = _engine_attr("update_autocast_dtype", "Autocast dtype of the update (or None).",
                                         settable=True)
    deterministic = _engine_attr("deterministic", "Greedy actions instead of sampled ones.", settable=True)
    cpu_chunk_samples = _engine_attr("cpu_chunk_samples", "cpu backend: agent-samples per chunk.", settable=True)
    update_chunk_samples = _engine_attr("update_chunk_samples", "GPU update chunks (None: automatic).", settable=True)

    collect = _engine_method("collect")
    batches = _engine_method("batches")
    update_policies = _engine_method("update_policies")
    end_iteration = _engine_method("end_iteration")
    start_episodes = _engine_method("start_episodes")
    restart_episodes = _engine_method("restart_episodes")
    evaluation_episodes = _engine_method("evaluation_episodes")
    use_local_gradients = _engine_method("use_local_gradients")
    load_state_dict = _engine_method("load_state_dict")
    rank_state_dict = _engine_method("rank_state_dict")
    load_progress = _engine_method("load_progress")
    random_state = _engine_method("random_state")
    load_random_state = _engine_method("load_random_state")
    cpu_chunk_rows = _engine_method("cpu_chunk_rows")
    update_chunk_rows = _engine_method("update_chunk_rows")

    # ------------------------------------------------------------------ 2.7.1 attribute names
    @property
    def cuda_envs(self) -> Any:
        """The env wrapper (2.7.1's name)."""
        return self.engine.env_wrapper

    @property
    def num_envs(self) -> int:
        return self.engine.config.trainer.num_envs

    @property
    def num_episodes(self) -> int:
        return self.engine.config.trainer.num_episodes

    @property
    def training_batch_size(self) -> int:
        """Env steps per iteration, summed over replicas (2.7.1's name)."""
        return self.engine.config.trainer.train_batch_size

    @property
    def training_batch_size_per_env(self) -> int:
        """Env steps per env per iteration (2.7.1's name; ``steps_per_iter`` here)."""
        return self.engine.steps_per_iter

    @property
    def policies_to_train(self) -> list[str]:
        return [tag for tag, p in self.engine.policies.items() if p.to_train]

    @property
    def models(self) -> dict[str, torch.nn.Module]:
        """``{tag: model}`` (DDPG: the actors)."""
        return {tag: p.model for tag, p in self.engine.policies.items()}

    @property
    def current_timestep(self) -> dict[str, int]:
        """``{tag: env steps trained on}`` (drives the schedules)."""
        return {tag: p.timestep for tag, p in self.engine.policies.items()}

    @property
    def perf_stats(self) -> PerfStats:
        """2.7.1's :class:`~warp_drive.training.run.reporting.PerfStats` (phase means extrapolated to every iteration)."""
        c = self.engine.counters
        iters = c.iteration

        def total(phase: str) -> float:
            return c.phase_seconds.get(phase, 0.0) / c.timed_iterations * iters if c.timed_iterations else 0.0

        return PerfStats(iters=iters, steps=int(c.perf["steps"]), policy_eval_time=total("policy"),
                         action_sample_time=total("sampling"), env_step_time=total("env_step"),
                         training_time=c.perf["training"], total_time=c.perf["total"])

    @property
    def env_steps_per_second(self) -> float:
        return self.engine.counters.steps_per_second()

    # ------------------------------------------------------------------ DDPG's network dictionaries (2.7.1's TrainerDDPG)
    def _networks(self, role: str) -> dict[str, nn.Module]:
        return {tag: getattr(p.nets, role) for tag, p in self.engine.policies.items()}

    actor_models = property(lambda self: self._networks("actor"), doc="``{tag: actor}`` (DDPG policies)")
    critic_models = property(lambda self: self._networks("critic"), doc="``{tag: critic}`` (DDPG policies)")
    target_actor_models = property(lambda self: self._networks("target_actor"), doc="``{tag: target actor}``")
    target_critic_models = property(lambda self: self._networks("target_critic"), doc="``{tag: target critic}``")

    # ------------------------------------------------------------------ 2.7.1 methods
    def generate_rollout(self, timer: Any = None) -> dict[str, torch.Tensor]:
        """One rollout into the policies' buffers (2.7.1's name); returns ``{tag: V(s_B)}``.
        ``timer``: a :class:`~warp_drive.training.engine.phase_timer.PhaseTimer` splitting it into phases."""
        return self.engine.generate_rollout(timer)

    def update(self, last_values: dict[str, torch.Tensor] | None = None) -> dict[str, dict[str, torch.Tensor]]:
        """One update of every trained policy from the current buffers (2.7.1's name); ``last_values`` is
        accepted for 2.7.1's call signature (advantages and returns were computed at the end of the rollout)."""
        return self.engine.update_policies(self.engine.batches())

    def load_model_checkpoint(self, ckpts_dict: Mapping[str, Any] | None = None) -> None:
        """Load policy weights: ``{tag: path}`` (or ``{tag: {role: path}}`` for policies of several
        networks), or (None) each policy's ``model.model_ckpt_filepath``
        (:func:`~warp_drive.training.checkpoint_files.load_policy_weights`: 2.7.1's files or ours; the
        timestep from the file names).

        Raises:
            ConfigError: see :func:`~warp_drive.training.checkpoint_files.load_policy_weights`.
        """
        policies = self.engine.policies
        if ckpts_dict is None:
            ckpts_dict = checkpoint_files.configured_weight_files(policies)
        checkpoint_files.load_policy_weights(policies, ckpts_dict, self.engine.device)

    def policy_files(self) -> dict[str, tuple[int, torch.nn.Module]]:
        """``{file prefix: (timestep, module)}``: what the ``<prefix>_<timestep>.state_dict`` files hold."""
        return checkpoint_files.policy_files(self.engine.policies)

    def save_model_checkpoint(self, iteration: int = 0) -> list[Path]:
        """2.7.1's weight files: ``<save_dir>/<tag>_<timestep>.state_dict`` for every policy.

        As in 2.7.1, only on iterations where ``iteration % saving.model_params_save_freq == 0`` or
        the last one (``num_iters - 1``), and only on rank 0. Fully connected categorical policies
        are written with 2.7.1's parameter names (2.7.1 loads them), other models with their own.

        Returns:
            The files written (empty when this iteration does not save).
        """
        freq = self.engine.config.saving.model_params_save_freq
        if self.rank != 0 or not (iteration % freq == 0 or iteration == self.num_iters - 1):
            return []
        paths = checkpoint_files.write_policy_files(Path(self.save_dir), self.policy_files())
        for path in paths:
            logger.info("policy weights written: %s", path)
        return paths

    def _all_ddpg(self) -> bool:
        return all(p.algorithm == "DDPG" for p in self.engine.config.policy.values())

    def evaluate_episodes(self, **sample_params: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """One episode per env with the current policies (2.7.1's evaluator).

        Args:
            sample_params: ``use_argmax=True`` for greedy actions (default: the config's
                ``sampler.params.use_argmax``). DDPG policies (2.7.1's ``TrainerDDPG``) also take ``scale``:
                ``scale=0`` plays ``mu(s)``, anything else the exploring actor.

        Returns:
            ``(episodic_reward_sum, episodic_step_sum)``: ``{tag: (E, A_p)}`` per-agent returns
            (every step's reward, the last one included) and ``{tag: (E,)}`` episode lengths.
        """
        if self._all_ddpg():
            unknown = set(sample_params) - set(SAMPLE_PARAMS)
            if unknown:
                raise ConfigError(f"unknown sample parameter(s) {sorted(unknown)}; DDPG takes {', '.join(SAMPLE_PARAMS)}")
            if {"damping", "stddev"} & set(sample_params):
                raise ConfigError("evaluate_episodes plays the policies' own OU noise schedules; set "
                                  "sampler.params.damping / stddev in the run config instead of passing them here")
            greedy = bool(sample_params.get("use_argmax")) or sample_params.get("scale") == 0
        else:
            greedy = greedy_from_sample_params(sample_params, self.engine.config.sampler.use_argmax)
        return evaluate_per_agent(self.engine, greedy)

    def fetch_episode_states(
        self,
        list_of_states: list[str] | None = None,
        env_id: int = 0,
        include_rewards_actions: bool = False,
        include_probabilities: bool = False,
        policy: str = "",
        **sample_params: Any,
    ) -> Any:
        """Play one episode and return env ``env_id``'s data arrays at every step (2.7.1's API; layout:
        :func:`warp_drive.training.run.evaluation.fetch_episode_states`; ``use_argmax=True``: greedy)."""
        greedy = greedy_from_sample_params(sample_params, self.engine.config.sampler.use_argmax)
        return fetch_episode_states(self.engine, list_of_states, env_id, include_rewards_actions, include_probabilities,
                                    policy, greedy)

    # ------------------------------------------------------------------ TrainerDDPG's old checkpoints
    def load_checkpoint(self, path: str | Path, state: Mapping[str, Any] | None = None) -> Path:
        """Restore a checkpoint: the trainer's own, or a :data:`LEGACY_FORMAT` one of 2.7.1-style
        ``TrainerDDPG`` (networks, optimizers, OU states, counters, shuffle generator, env replicas)."""
        path = Path(path)
        if state is None and path.is_file():
            state = safe_load(path, map_location=self.engine.device)
        if not (isinstance(state, Mapping) and state.get("format") == LEGACY_FORMAT):
            return super().load_checkpoint(path, state)
        check_contents(state, path)
        policies = self.engine.policies
        if set(state["policies"]) != set(policies):
            raise ConfigError(f"checkpoint policies {sorted(state['policies'])} differ from the trainer's {sorted(policies)}")
        new = self.engine.state_dict()  # this run's random streams, with the old checkpoint's parts put in
        new.update(iteration=state["iteration"], seed=state["seed"], perf=state["perf"])
        new["rng"]["generator"] = torch.as_tensor(state["generator"]).cpu()
        rank_state = new["rank_state"]
        rank_state.update(data_store=state["data_store"], env_resetter=state["env_resetter"], started=state["started"])
        for tag, p in policies.items():
            old = state["policies"][tag]
            nets = dict(old["nets"])
            new["policies"][tag] = {"model": nets.pop("actor"), "nets": nets, "algorithm": {"ou": old["ou"]},
                                    "timestep": old["timestep"], "agent_ids": p.agent_ids}
            rank_state["episode_carry"][tag] = list(old["episode_carry"])
        self.engine.load_state_dict(new, source=f"checkpoint {str(path)!r}")
        self.start_weights = None  # not in that format: the run's initial weights are unknown
        logger.debug("resumed from %s (a %s checkpoint) at iteration %d", path, LEGACY_FORMAT, self.engine.iteration)
        return path


class TrainerDDPG(Trainer271):
    """2.7.1's ``TrainerDDPG``: :class:`Trainer271` whose policies all use DDPG (refused otherwise)."""

    only_algorithm = "DDPG"


def trainer_class_for(config: Any) -> type:
    """2.7.1's split: :class:`TrainerDDPG` for a run config whose policies all use DDPG, else :class:`Trainer271`."""
    return TrainerDDPG if all(p.algorithm == "DDPG" for p in config.policy.values()) else Trainer271
