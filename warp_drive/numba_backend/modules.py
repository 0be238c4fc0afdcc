"""2.7.1's generated Numba modules, made in memory: ``env_config`` and ``env_runner``.

WarpDrive 2.7.1 wrote ``warp_drive/numba_includes/env_config.py`` (the launch constants
``wkNumberEnvs``, ``wkNumberAgents``, ``wkBlocksPerEnv``) and ``env_runner.py`` (star imports of the
core Numba modules and of the env's step module) into the installed package, then imported them.
Here both are module objects built in memory and registered in ``sys.modules`` under the same
names, so ``from warp_drive.numba_includes.env_config import *`` in an env's step module works
unchanged, and nothing is written into the package.

A Numba kernel reads module globals such as ``wkNumberAgents`` when it is compiled, from the module
that defines it. 2.7.1 imported the env module once per process, so a second configuration kept the
first one's constants (its known defect 13). Here the env module is executed afresh for every
(module, constants) pair, right after ``env_config`` holds those constants; each pair is executed
once per process and reused.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any, Mapping

from warp_drive.errors import ConfigError

ENV_CONFIG = "warp_drive.numba_includes.env_config"
ENV_RUNNER = "warp_drive.numba_includes.env_runner"
#: The core Numba service modules every runner holds (2.7.1's ``template_env_runner.txt``).
CORE_MODULES = (
    "warp_drive.numba_includes.core.random",
    "warp_drive.numba_includes.core.reset",
    "warp_drive.numba_includes.core.log",
    "warp_drive.numba_includes.core.pool_reset",
)
#: 2.7.1's template file names (the only ones accepted: the modules are rendered in memory).
TEMPLATE_HEADER = "template_env_config.txt"
TEMPLATE_RUNNER = "template_env_runner.txt"

#: 2.7.1's default table (``get_default_env_directory``): env name -> dotted module of its Numba step, for
#: this package's example envs (a registered module or the class's ``numba_source`` takes precedence).
DEFAULT_ENV_MODULES: dict[str, str] = {
    "DummyEnv": "example_envs.dummy_env.test_step_numba",
    "TagGridWorld": "example_envs.tag_gridworld.tag_gridworld_step_numba",
    "TagContinuous": "example_envs.tag_continuous.tag_continuous_step_numba",
    "ClassicControlCartPoleEnv": "example_envs.classic_control.cartpole.cartpole_step_numba",
    "ClassicControlMountainCarEnv": "example_envs.classic_control.mountain_car.mountain_car_step_numba",
    "ClassicControlContinuousMountainCarEnv":
        "example_envs.classic_control.continuous_mountain_car.continuous_mountain_car_step_numba",
    "ClassicControlAcrobotEnv": "example_envs.classic_control.acrobot.acrobot_step_numba",
    "ClassicControlPendulumEnv": "example_envs.classic_control.pendulum.pendulum_step_numba",
}

_LOCK = threading.Lock()
_ENV_MODULES: dict[tuple, types.ModuleType] = {}


def check_templates(template_header_file: str | None, template_runner_file: str | None = None,
                    template_path: str | None = None) -> None:
    """Accept 2.7.1's default template names (or None); anything else is a ConfigError."""
    if template_path is not None:
        raise ConfigError(f"template_path={template_path!r}: the Numba modules are rendered in memory from "
                          f"warp_drive's own templates; leave template_path unset")
    for given, expected in ((template_header_file, TEMPLATE_HEADER), (template_runner_file, TEMPLATE_RUNNER)):
        if given is not None and given != expected:
            raise ConfigError(f"template file {given!r}: only 2.7.1's {expected!r} is known (rendered in memory)")


def launch_constants(num_envs: int, num_agents: int, blocks_per_env: int = 1,
                     constants: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The names ``env_config`` holds: 2.7.1's three, then the env's own (``cuda_constants()``;
    sequences become tuples, which Numba reads as constant arrays)."""
    out: dict[str, Any] = {"wkNumberEnvs": int(num_envs), "wkNumberAgents": int(num_agents),
                           "wkBlocksPerEnv": int(blocks_per_env)}
    for name, value in (constants or {}).items():
        if name in out:
            raise ConfigError(f"env constant {name!r} would replace warp_drive's launch constant of that name")
        out[name] = tuple(value) if isinstance(value, (list, tuple)) else value
    return out


def install_env_config(values: Mapping[str, Any]) -> types.ModuleType:
    """Make ``warp_drive.numba_includes.env_config`` a module holding ``values`` (and nothing else)."""
    module = types.ModuleType(ENV_CONFIG, "Launch constants of the Numba backend (generated in memory).")
    module.__dict__.update(values)
    module.__all__ = list(values)
    sys.modules[ENV_CONFIG] = module
    parent = sys.modules.get("warp_drive.numba_includes")
    if parent is not None:
        setattr(parent, "env_config", module)
    return module


def _freeze(values: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in values.items()))


def load_env_module(path: str, values: Mapping[str, Any]) -> types.ModuleType:
    """The Numba module at dotted ``path``, executed with ``env_config`` holding ``values``.

    Raises:
        ConfigError: ``path`` is not an importable module.
    """
    key = (path, _freeze(values))
    with _LOCK:
        module = _ENV_MODULES.get(key)
        if module is not None:
            install_env_config(values)
            return module
        install_env_config(values)
        try:
            spec = importlib.util.find_spec(path)
        except (ImportError, ValueError) as err:
            raise ConfigError(f"Numba env module {path!r} cannot be imported: {err}") from err
        if spec is None or spec.loader is None:
            raise ConfigError(f"Numba env module {path!r} is not importable; register a dotted module path, "
                              f"e.g. 'my_pkg.my_env_step_numba'")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _ENV_MODULES[key] = module
        return module


def build_env_runner(env_module: types.ModuleType | None) -> types.ModuleType:
    """``warp_drive.numba_includes.env_runner``: the public names of the core modules, then those of
    the env module (2.7.1's star imports, in its order)."""
    runner = types.ModuleType(ENV_RUNNER, "Core Numba services and the env's kernels (generated in memory).")
    sources = [importlib.import_module(name) for name in CORE_MODULES]
    if env_module is not None:
        sources.append(env_module)
    for source in sources:
        names = getattr(source, "__all__", None) or [n for n in vars(source) if not n.startswith("_")]
        runner.__dict__.update({n: getattr(source, n) for n in names})
    sys.modules[ENV_RUNNER] = runner
    return runner
