"""WarpDrive 2.7.1's trainer methods and attribute names, on the :class:`~warp_drive.training.trainer.Trainer`.

2.7.1 code reads these names (``cuda_envs``, ``models``, ``current_timestep``, ``perf_stats``, ...)
and calls these methods (``generate_rollout``, ``update``, ``evaluate_episodes``,
``fetch_episode_states``, the ``<tag>_<timestep>.state_dict`` weight files); none of them is part of
the :class:`~warp_drive.training.engine.Engine`, which the Trainer holds as ``engine``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from warp_drive.errors import ConfigError
from warp_drive.training.distributed import unwrap

logger = logging.getLogger(__name__)


class TrainerAPI271:
    """The 2.7.1 surface of :class:`~warp_drive.training.trainer.Trainer` (a mixin: it reads the
    trainer's ``engine``, ``config``, ``policies``, ``save_dir``, ``rank`` and ``num_iters``)."""

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
        """Env steps per env per iteration (2.7.1's name; ``steps_per_iter`` here)."""
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

    @property
    def perf_stats(self) -> Any:
        """2.7.1's :class:`~warp_drive.training.reporting.PerfStats` (phase means extrapolated to every iteration)."""
        from warp_drive.training.reporting import PerfStats

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

    def generate_rollout(self, timer: Any = None) -> dict[str, torch.Tensor]:
        """One rollout into the policies' buffers (2.7.1's name); returns ``{tag: V(s_B)}``.
        ``timer``: a :class:`~warp_drive.training.phase_timer.PhaseTimer` splitting it into phases."""
        return self.engine.generate_rollout(timer)

    def update(self, last_values: dict[str, torch.Tensor] | None = None) -> dict[str, dict[str, torch.Tensor]]:
        """One update of every trained policy from the current buffers (2.7.1's name); ``last_values`` is
        accepted for 2.7.1's call signature (advantages and returns were computed at the end of the rollout)."""
        return self.engine.update_policies(self.engine.batches())

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

        if ckpts_dict is None:
            ckpts_dict = {tag: getattr(getattr(p.config, "model", None), "model_ckpt_filepath", "") for tag, p in self.policies.items()}
        if not isinstance(ckpts_dict, Mapping):
            raise ConfigError(f"ckpts_dict must map policy tags to file paths; got {type(ckpts_dict).__name__}")
        for tag in ckpts_dict:
            if tag not in self.policies:
                raise ConfigError(f"checkpoint for unknown policy {tag!r}; policies: {', '.join(self.policies)}")
        for tag, paths in ckpts_dict.items():
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

        return evaluate_per_agent(self.engine, greedy_from_sample_params(sample_params, self.config.sampler.use_argmax))

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
        :func:`warp_drive.training.evaluation.fetch_episode_states`; ``use_argmax=True``: greedy)."""
        from warp_drive.training.evaluation import fetch_episode_states, greedy_from_sample_params

        greedy = greedy_from_sample_params(sample_params, self.config.sampler.use_argmax)
        return fetch_episode_states(self.engine, list_of_states, env_id, include_rewards_actions, include_probabilities,
                                    policy, greedy)
