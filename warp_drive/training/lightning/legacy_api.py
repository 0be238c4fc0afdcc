"""WarpDrive 2.7.1's API of its Lightning module (what tutorial 7 and 2.7.1's scripts use), on top of the engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from warp_drive.training.engine import Engine


class LegacyModuleAPI:
    """WarpDrive 2.7.1's module properties and methods, read from or delegated to ``self.engine``.

    A mixin of :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase`, which provides
    ``engine`` (None until built) and ``ensure_engine()`` (builds it with the factory if needed).
    """

    engine: Engine | None

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

    def fetch_episode_states(self, *args: Any, **kwargs: Any) -> Any:
        """Roll out one episode with the current policies and return the requested data arrays.

        Same arguments and return value as the engine's
        :meth:`~warp_drive.training.trainer.Trainer.fetch_episode_states` (2.7.1's
        ``list_of_states, env_id=0, ...``). The envs are force-reset before and left mid-episode;
        ``trainer.fit`` resets them again when training starts.
        """
        return self.ensure_engine().fetch_episode_states(*args, **kwargs)

    def load_model_checkpoint(self, ckpts_dict: Mapping[str, str] | None = None) -> Any:
        """Load policy weights: ``{tag: path}``, or the config's ``model.model_ckpt_filepath`` when None.

        Delegates to :meth:`~warp_drive.training.trainer.Trainer.load_model_checkpoint` (2.7.1's files and ours).
        """
        return self.ensure_engine().load_model_checkpoint(ckpts_dict)

    def save_model_checkpoint(self, iteration: int = 0) -> Any:
        """Write the policy weights to the run folder (the engine's ``save_model_checkpoint``)."""
        return self.ensure_engine().save_model_checkpoint(iteration)

    def graceful_close(self) -> None:
        """Release what the engine holds open (metric files); the module is not used afterwards."""
        if self.engine is not None:
            self.engine.graceful_close()
