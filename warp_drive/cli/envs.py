"""The example envs as the command lines name them: the one module of the cli that imports
``example_envs`` (which registers them by name in warp_drive's env registrar,
``example_envs.registrar``); the programs take env classes, run configs and CPU-sized settings from
here and hand the library env classes only."""

from __future__ import annotations

from pathlib import Path

import example_envs
from warp_drive.errors import ConfigError

#: 2.7.1 run-config names -> this project's example env names (``example_envs.get_example_env_class``).
#: (2.7.1's Tag configs are named as the envs here: tag_continuous, tag_gridworld, tag_gridworld_with_reset_pool.)
REFERENCE_ENV_NAMES = {
    "single_cartpole": "cartpole",
    "single_acrobot": "acrobot",
    "single_mountain_car": "mountain_car",
    "single_continuous_mountain_car": "continuous_mountain_car",
    "single_pendulum": "pendulum",
    # this project's SAC configs (warp_drive/training/run_configs/*_sac.yaml; 2.7.1 had no SAC)
    "single_pendulum_sac": "pendulum",
    "single_continuous_mountain_car_sac": "continuous_mountain_car",
}

#: example env -> its CPU-sized settings (``cpu_sized.yaml`` in the env's folder), applied on the cpu backend
#: to ``--env`` runs before the command line's own overrides (the bundled configs are sized for a GPU).
CPU_SIZED: dict[str, example_envs.CpuSizedSettings] = {
    name: settings for name in example_envs.example_env_names()
    if (settings := example_envs.get_cpu_sized_settings(name)) is not None}
#: example env -> its CPU-sized overrides (dotted ``key=value``).
CPU_SIZED_OVERRIDES: dict[str, tuple[str, ...]] = {name: s.overrides for name, s in CPU_SIZED.items()}
#: example env -> one line on what its CPU-sized settings keep and change.
CPU_SIZED_SUMMARY: dict[str, str] = {name: s.summary for name, s in CPU_SIZED.items()}


def example_env_names() -> list[str]:
    """The example envs' names (``--env``), sorted."""
    return example_envs.example_env_names()


def default_config_path(name: str) -> Path:
    """The run config bundled with the example env ``name``."""
    return example_envs.get_default_config_path(name)


def example_env_name(name: str) -> str:
    """The example-env registry name for a run config's ``name``.

    Accepts this project's names (``cartpole``), 2.7.1's run-config names (``single_cartpole``)
    and env class names (``ClassicControlCartPoleEnv``, the ``name`` of the classic-control
    configs in ``example_envs/classic_control/*/run_config.yaml``).

    Raises:
        ConfigError: no example env has that name (with a did-you-mean hint).
    """
    key = REFERENCE_ENV_NAMES.get(name, name)
    names = example_envs.example_env_names()
    if str(key).lower() in names:
        return str(key).lower()
    for candidate in names:  # a class name: import the envs until one matches
        try:
            if example_envs.get_example_env_class(candidate).__name__.lower() == str(name).lower():
                return candidate
        except ConfigError:
            continue
    example_envs.get_example_env_class(key)  # raises the registry's error (unknown name, did-you-mean, known names)
    raise ConfigError(f"unknown example env {name!r}")  # pragma: no cover - the line above raised


def env_class_for(name: str) -> type:
    """The example env class a run config ``name`` trains (see :func:`example_env_name`)."""
    return example_envs.get_example_env_class(example_env_name(name))
