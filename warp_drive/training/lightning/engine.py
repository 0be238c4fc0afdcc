"""Building the engine (a :class:`~warp_drive.training.trainer.Trainer`) per Lightning rank.

With ``strategy="ddp"`` every rank is its own process that must build its env replicas, data
store and models on its own GPU, after Lightning has chosen that GPU. The module therefore takes
an *engine factory*, called in ``setup`` as ``factory(rank=..., world_size=..., device_id=...)``.
:class:`ExampleEnvEngineFactory` builds engines for the bundled example envs; any callable with
that signature works for custom envs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from warp_drive.config import RunConfig, load_run_config
from warp_drive.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from warp_drive.training.trainer import Trainer

logger = logging.getLogger(__name__)


class EngineFactory(Protocol):
    """Builds the engine of one rank.

    Args:
        rank: Global rank of the calling process (0 without DDP).
        world_size: Number of ranks.
        device_id: CUDA device index of this rank (None on the CPU).
    """

    def __call__(self, *, rank: int, world_size: int, device_id: int | None) -> Trainer: ...


@dataclass
class ExampleEnvEngineFactory:
    """Engine factory for a bundled example env (or a run config naming one).

    Picklable (plain data), so it also works where Lightning pickles the module.

    Args:
        env: Example env name (``example_envs.get_example_env_class``); default: the config's
            ``name``.
        config: Run config path or mapping; default: the env's bundled ``run_config.yaml``.
        overrides: Dotted ``key=value`` overrides, e.g. ``["trainer.num_envs=100"]``.
        backend: ``"pycuda"`` or ``"cpu"``; default: pycuda when pycuda and a GPU are present.
        results_dir: Run directory of the engine (unused by the Lightning path except for
            ``Trainer.save_checkpoint``).
        policy_map: ``{tag: [agent ids]}``; default: ``default_policy_map`` of the example script
            (taggers/runners for Tag, else one policy over all agents).

    Raises:
        ConfigError: Neither ``env`` nor ``config`` given, or the config is invalid.
    """

    env: str | None = None
    config: str | Mapping[str, Any] | None = None
    overrides: Sequence[str] = ()
    backend: str | None = None
    results_dir: str | None = None
    policy_map: Mapping[str, Sequence[int]] | None = None
    _resolved_backend: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.env is None and self.config is None:
            raise ConfigError("ExampleEnvEngineFactory needs env= (an example env name) or config= (a run config)")
        self.overrides = list(self.overrides)

    @property
    def resolved_backend(self) -> str:
        """The backend used: the requested one, else pycuda when usable, else cpu."""
        if self._resolved_backend is None:
            from warp_drive.training.example_training_script import choose_backend

            self._resolved_backend = choose_backend(self.backend)
        return self._resolved_backend

    def run_config(self) -> RunConfig:
        """The validated run config (bundled or given, with the overrides and the backend)."""
        from warp_drive.training.example_training_script import example_envs

        source = self.config if self.config is not None else example_envs.get_default_config_path(str(self.env))
        return load_run_config(source, [*self.overrides, f"trainer.env_backend={self.resolved_backend}"])

    def __call__(self, *, rank: int = 0, world_size: int = 1, device_id: int | None = None) -> Trainer:
        from warp_drive.training.example_training_script import example_envs
        from warp_drive.training.build import build_trainer

        cfg = self.run_config()
        logger.info("rank %d/%d: building %s engine on %s", rank, world_size, cfg.name,
                    f"cuda:{device_id}" if device_id is not None else self.resolved_backend)
        return build_trainer(cfg, example_envs.get_example_env_class(self.env or cfg.name), backend=self.resolved_backend, rank=rank,
                             world_size=world_size, device_id=device_id, results_dir=self.results_dir, verbose=False,
                             policy_map=self.policy_map)
