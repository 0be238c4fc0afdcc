"""The Lightning engine factory of envs found by name (import it from :mod:`warp_drive.training.lightning`).

It imports ``example_envs``, so it sits in the layer of the command lines (docs/architecture.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import example_envs
from warp_drive.config import RunConfig, load_run_config
from warp_drive.vocab.registrar import EnvironmentRegistrar
from warp_drive.errors import ConfigError
from warp_drive.training.run.build import build_trainer
from warp_drive.training.run.trainer import Trainer
from warp_drive.cuda.device import choose_backend

logger = logging.getLogger("warp_drive.training.lightning.engine")


@dataclass
class ExampleEnvEngineFactory:
    """Engine factory for an env found by name: a bundled example env (or a run config naming one),
    or an env of your own ``registrar``.

    Picklable (plain data), so it also works where Lightning pickles the module.

    Args:
        env: Env name (``example_envs.get_example_env_class``, or ``registrar.get``); default: the
            config's ``name``.
        config: Run config path or mapping; default: the env's run config (the example env's bundled
            ``run_config.yaml``, or the one registered with it).
        overrides: Dotted ``key=value`` overrides, e.g. ``["trainer.num_envs=100"]``.
        backend: ``"pycuda"`` or ``"cpu"``; default: pycuda when pycuda and a GPU are present.
        results_dir: Run directory of the engine (unused by the Lightning path except for
            ``Trainer.save_checkpoint``).
        policy_map: ``{tag: [agent ids]}``; default: :func:`~warp_drive.training.run.build.default_policy_map`
            (taggers/runners for Tag, else one policy over all agents).
        registrar: Where ``env`` is looked up; default: the example envs (``example_envs.registrar``).

    Raises:
        ConfigError: Neither ``env`` nor ``config`` given, or the config is invalid.
    """

    env: str | None = None
    config: str | Mapping[str, Any] | None = None
    overrides: Sequence[str] = ()
    backend: str | None = None
    results_dir: str | None = None
    policy_map: Mapping[str, Sequence[int]] | None = None
    registrar: EnvironmentRegistrar | None = None
    _resolved_backend: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.env is None and self.config is None:
            raise ConfigError("ExampleEnvEngineFactory needs env= (an example env name) or config= (a run config)")
        self.overrides = list(self.overrides)

    @property
    def resolved_backend(self) -> str:
        """The backend used: the requested one, else pycuda when usable, else cpu."""
        if self._resolved_backend is None:
            self._resolved_backend = choose_backend(self.backend)
        return self._resolved_backend

    def run_config(self) -> RunConfig:
        """The validated run config (bundled or given, with the overrides and the backend)."""
        source = self.config if self.config is not None else self._config_path(str(self.env))
        return load_run_config(source, [*self.overrides, f"trainer.env_backend={self.resolved_backend}"])

    def _config_path(self, name: str) -> Any:
        if self.registrar is None:
            return example_envs.get_default_config_path(name)
        return self.registrar.run_config_path(name)

    def env_class(self, name: str) -> type:
        """The env class of ``name`` (in :attr:`registrar`, by default among the example envs)."""
        if self.registrar is None:
            return example_envs.get_example_env_class(name)
        return self.registrar.get(name, self.resolved_backend)

    def __call__(self, *, rank: int = 0, world_size: int = 1, device_id: int | None = None) -> Trainer:
        cfg = self.run_config()
        logger.info("rank %d/%d: building %s engine on %s", rank, world_size, cfg.name,
                    f"cuda:{device_id}" if device_id is not None else self.resolved_backend)
        return build_trainer(cfg, self.env_class(self.env or cfg.name), backend=self.resolved_backend, rank=rank,
                             world_size=world_size, device_id=device_id, results_dir=self.results_dir, verbose=False,
                             policy_map=self.policy_map)
