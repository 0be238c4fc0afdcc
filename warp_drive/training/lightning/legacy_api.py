"""WarpDrive 2.7.1's API of its Lightning module (what tutorial 7 and 2.7.1's scripts use), on top of the engine."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_drive.errors import UsageError
from warp_drive.training import checkpoint_files
from warp_drive.training.engine import Engine
from warp_drive.training.run.evaluation import fetch_episode_states, greedy_from_sample_params

logger = logging.getLogger(__name__)


class LegacyModuleAPI:
    """WarpDrive 2.7.1's module properties and methods, read from or delegated to ``self.engine``.

    A mixin of :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase`, which provides
    ``engine`` (None until built), ``run_trainer`` (the Trainer the engine came in, whose run folder holds the
    weight files) and ``ensure_engine()`` (builds it with the factory if needed).
    """

    engine: Engine | None
    run_trainer: Any

    if TYPE_CHECKING:  # pragma: no cover - defined by WarpDriveModuleBase
        def ensure_engine(self, rank: int = 0, world_size: int = 1, device_id: int | None = None) -> Engine: ...

    @property
    def training_batch_size(self) -> int | None:
        """Env steps per training iteration (``trainer.train_batch_size``); None before the engine exists."""
        return None if self.engine is None else int(self.engine.config.trainer.train_batch_size)

    @property
    def num_iters(self) -> int | None:
        """Training iterations of the run config (``num_episodes * episode_length // train_batch_size``)."""
        return None if self.engine is None else int(self.engine.num_iters)

    @property
    def env_wrapper(self) -> Any:
        """The engine's :class:`~warp_drive.env_wrapper.EnvWrapper` (None before the engine exists)."""
        return None if self.engine is None else self.engine.env_wrapper

    @property
    def cuda_envs(self) -> Any:
        """2.7.1's name of :attr:`env_wrapper`."""
        return self.env_wrapper

    def fetch_episode_states(self, list_of_states: list[str] | None = None, env_id: int = 0,
                             include_rewards_actions: bool = False, include_probabilities: bool = False,
                             policy: str = "", **sample_params: Any) -> Any:
        """Roll out one episode with the current policies and return the requested data arrays.

        2.7.1's arguments (``list_of_states, env_id=0, ...``; ``use_argmax=True``: greedy) and return value
        (:func:`warp_drive.training.run.evaluation.fetch_episode_states`). The envs are force-reset before and
        left mid-episode; ``trainer.fit`` resets them again when training starts.
        """
        engine = self.ensure_engine()
        greedy = greedy_from_sample_params(sample_params, engine.config.sampler.use_argmax)
        return fetch_episode_states(engine, list_of_states, env_id, include_rewards_actions, include_probabilities,
                                    policy, greedy)

    def load_model_checkpoint(self, ckpts_dict: Mapping[str, str] | None = None) -> None:
        """Load policy weights: ``{tag: path}``, or the config's ``model.model_ckpt_filepath`` when None
        (:func:`~warp_drive.training.checkpoint_files.load_policy_weights`: 2.7.1's files and ours)."""
        engine = self.ensure_engine()
        if ckpts_dict is None:
            ckpts_dict = checkpoint_files.configured_weight_files(engine.policies)
        checkpoint_files.load_policy_weights(engine.policies, ckpts_dict, engine.device)

    def save_model_checkpoint(self, iteration: int = 0) -> list[Path]:
        """2.7.1's weight files ``<run folder>/<tag>_<timestep>.state_dict``: on iterations where
        ``iteration % saving.model_params_save_freq == 0`` or the last one (``num_iters - 1``), on rank 0.

        Raises:
            UsageError: the module got a bare engine, without the Trainer whose run folder holds the files.
        """
        engine = self.ensure_engine()
        if self.run_trainer is None:
            raise UsageError("the policy weight files go to a run folder: give the module the Trainer that holds "
                             "the engine (engine=trainer, or an engine factory that returns one)")
        freq = engine.config.saving.model_params_save_freq
        if self.run_trainer.rank != 0 or not (iteration % freq == 0 or iteration == engine.num_iters - 1):
            return []
        paths = checkpoint_files.write_policy_files(Path(self.run_trainer.save_dir),
                                                    checkpoint_files.policy_files(engine.policies))
        for path in paths:
            logger.info("policy weights written: %s", path)
        return paths

    def graceful_close(self) -> None:
        """Release what the run holds open (metric files); the module is not used afterwards."""
        if self.run_trainer is not None:
            self.run_trainer.graceful_close()
