"""WarpDrive 2.7.1's Numba build helpers (``warp_drive.utils.numba_utils.misc``), in memory.

2.7.1 rendered ``env_config.py`` (the launch constants) and ``env_runner.py`` (star imports of the core
Numba modules and the env's step module) from template files into the installed package, then imported
them. Here the same two modules are built in memory by :mod:`warp_drive.numba_backend.modules` and
registered under 2.7.1's names (``warp_drive.numba_includes.env_config`` / ``env_runner``), so these
helpers do what 2.7.1's did without writing into the package: ``update_env_header`` installs the
constants, ``check_env_header`` checks them, ``update_env_runner`` builds the runner for an env. Nothing
here imports numba until an env's Numba module is loaded.
"""

from __future__ import annotations

import sys
from typing import Any

from warp_drive.errors import ConfigError
from warp_drive.numba_backend import modules

#: 2.7.1's default table: env name -> dotted module of its Numba step (this package's example envs).
DEFAULT_NUMBA_ENV_MODULES = modules.DEFAULT_ENV_MODULES


def get_default_env_directory(env_name: str) -> str | None:
    """The dotted module of one of 2.7.1's built-in envs' Numba step, or None for any other name."""
    return DEFAULT_NUMBA_ENV_MODULES.get(env_name)


def update_env_header(template_header_file: str = modules.TEMPLATE_HEADER, path: str | None = None, num_envs: int = 1,
                      num_agents: int = 1, blocks_per_env: int = 1) -> None:
    """Make ``warp_drive.numba_includes.env_config`` hold the launch constants (2.7.1 wrote the file).

    Raises:
        ConfigError: a template other than 2.7.1's, or a ``path`` (nothing is rendered from files).
    """
    modules.check_templates(template_header_file, None, path)
    modules.install_env_config(modules.launch_constants(num_envs, num_agents, blocks_per_env))


def check_env_header(header_file: str = "env_config.py", path: str | None = None, num_envs: int = 1,
                     num_agents: int = 1, blocks_per_env: int = 1) -> None:
    """Check that ``env_config`` holds these launch constants (2.7.1 re-read the generated file).

    Raises:
        ConfigError: no ``env_config`` was made yet, or it holds other values (named).
    """
    if header_file != "env_config.py" or path is not None:
        raise ConfigError(f"check_env_header({header_file!r}, path={path!r}): env_config is made in memory; "
                          f"leave header_file and path at their defaults")
    config = sys.modules.get(modules.ENV_CONFIG)
    if config is None:
        raise ConfigError("no env_config was made yet; call update_env_header(...) or fm.import_numba_env_config()")
    expected = {"wkNumberEnvs": num_envs, "wkNumberAgents": num_agents, "wkBlocksPerEnv": blocks_per_env}
    wrong = {k: getattr(config, k, None) for k, v in expected.items() if getattr(config, k, None) != v}
    if wrong:
        raise ConfigError(f"env_config holds {wrong}, expected {expected}")


def update_env_runner(template_runner_file: str = modules.TEMPLATE_RUNNER, path: str | None = None,
                      env_name: str | None = None, customized_env_registrar: Any = None) -> None:
    """Build ``warp_drive.numba_includes.env_runner`` for ``env_name``: the core Numba modules and the env's
    step module (registered in ``customized_env_registrar``, else 2.7.1's default table), executed with the
    current ``env_config``.

    Raises:
        ConfigError: a custom template or path, no env_config yet, or no Numba module for ``env_name``.
    """
    modules.check_templates(None, template_runner_file, path)
    registered = None
    if customized_env_registrar is not None and env_name is not None:
        registered = customized_env_registrar.get_cuda_env_src_path(env_name, env_backend="numba")
    source = registered or (get_default_env_directory(env_name) if env_name else None)
    if not source:
        raise ConfigError(f"no Numba module for env {env_name!r}: register it with registrar.add_cuda_env_src_path("
                          f"{env_name!r}, 'my_pkg.my_env_step_numba', env_backend='numba') and pass "
                          f"customized_env_registrar=registrar")
    config = sys.modules.get(modules.ENV_CONFIG)
    if config is None:
        raise ConfigError("no env_config was made yet; call update_env_header(...) first")
    values = {k: getattr(config, k) for k in getattr(config, "__all__", [])}
    modules.build_env_runner(modules.load_env_module(str(source), values))
