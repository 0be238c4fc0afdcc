"""Example environments shipped with warp_drive, looked up by name.

Classes are imported lazily (by import string), so ``import example_envs`` costs nothing and an env
whose module is missing fails only when it is asked for::

    from example_envs import get_example_env_class, get_default_config_path

    TagContinuous = get_example_env_class("tag_continuous")
    config_path = get_default_config_path("tag_continuous")

The bottom half holds the small argument checks the example envs share: each raises
:class:`~warp_drive.errors.ConfigError` naming the env, the argument, the value seen and the fix.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from warp_drive.errors import ConfigError


class ExampleEnvSpec(NamedTuple):
    """Where an example env lives: ``"package.module:Class"`` and its run config file name."""

    import_path: str
    config_file: str = "run_config.yaml"


_EXAMPLE_ENVS: dict[str, ExampleEnvSpec] = {
    "tag_continuous": ExampleEnvSpec("example_envs.tag_continuous.tag_continuous:TagContinuous"),
    "tag_gridworld": ExampleEnvSpec("example_envs.tag_gridworld.tag_gridworld:TagGridWorld"),
    "tag_gridworld_with_reset_pool": ExampleEnvSpec(
        "example_envs.tag_gridworld.tag_gridworld:TagGridWorldWithResetPool",
        "run_config_with_reset_pool.yaml",
    ),
    "dummy_env": ExampleEnvSpec("example_envs.dummy_env.dummy_env:DummyEnv"),
}

# Hook for the single-agent classic-control envs (example_envs/classic_control/<env>/<env>.py).
# Nothing is imported until asked; a run config is looked up as run_config.yaml next to the module.
_CLASSIC_CONTROL_ENVS: dict[str, ExampleEnvSpec] = {
    "cartpole": ExampleEnvSpec("example_envs.classic_control.cartpole.cartpole:ClassicControlCartPoleEnv"),
    "acrobot": ExampleEnvSpec("example_envs.classic_control.acrobot.acrobot:ClassicControlAcrobotEnv"),
    "mountain_car": ExampleEnvSpec(
        "example_envs.classic_control.mountain_car.mountain_car:ClassicControlMountainCarEnv"
    ),
    "continuous_mountain_car": ExampleEnvSpec(
        "example_envs.classic_control.continuous_mountain_car.continuous_mountain_car:"
        "ClassicControlContinuousMountainCarEnv"
    ),
    "pendulum": ExampleEnvSpec("example_envs.classic_control.pendulum.pendulum:ClassicControlPendulumEnv"),
}


def example_env_names() -> list[str]:
    """Every name :func:`get_example_env_class` accepts."""
    return sorted({**_EXAMPLE_ENVS, **_CLASSIC_CONTROL_ENVS})


def _spec(name: str) -> ExampleEnvSpec:
    table = {**_EXAMPLE_ENVS, **_CLASSIC_CONTROL_ENVS}
    key = str(name).lower()
    if key not in table:
        match = difflib.get_close_matches(key, table, n=1)
        hint = f"did you mean '{match[0]}'? " if match else ""
        raise ConfigError(f"unknown example env '{name}'; {hint}known: {', '.join(sorted(table))}")
    return table[key]


def get_example_env_class(name: str) -> type:
    """The env class registered under ``name`` (imported on first use).

    Raises:
        ConfigError: ``name`` is unknown, or its module cannot be imported.
    """
    module_name, _, class_name = _spec(name).import_path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"example env '{name}' lives in {module_name}, which failed to import: {err}") from err
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ConfigError(f"example env '{name}': {module_name} has no class {class_name}") from None


def get_default_config_path(name: str) -> Path:
    """Path of the run config YAML shipped next to the env ``name``.

    Raises:
        ConfigError: ``name`` is unknown or the config file does not exist.
    """
    spec = _spec(name)
    module_name = spec.import_path.partition(":")[0]
    found = importlib.util.find_spec(module_name)
    if found is None or found.origin is None:
        raise ConfigError(f"example env '{name}': module {module_name} was not found")
    path = Path(found.origin).with_name(spec.config_file)
    if not path.is_file():
        raise ConfigError(f"example env '{name}' has no run config at {path}")
    return path


# ----------------------------------------------------------------------------- argument checks
def reject_unknown_kwargs(env_name: str, unknown: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """Raise ConfigError for the first unknown keyword argument, with a did-you-mean hint."""
    accepted = list(accepted)
    for key, value in unknown.items():
        match = difflib.get_close_matches(key, accepted, n=1)
        hint = f"did you mean '{match[0]}'?" if match else f"accepted: {', '.join(accepted)}"
        raise ConfigError(f"{env_name}: unknown argument {key}={value!r}; {hint}")


def check_int(env_name: str, key: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (bools refused) within ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, (int,)) and not _is_numpy_int(value):
        raise ConfigError(f"{env_name}: {key}={value!r} must be an integer; pass a whole number")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ConfigError(f"{env_name}: {key}={value} is too small; set {key} >= {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{env_name}: {key}={value} is too large; set {key} <= {maximum}")
    return value


def check_float(
    env_name: str,
    key: str,
    value: Any,
    *,
    above: float | None = None,
    at_least: float | None = None,
    at_most: float | None = None,
    fix: str = "",
) -> float:
    """A finite real number with optional bounds (``above`` is exclusive, the others inclusive)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_numpy_real(value):
        raise ConfigError(f"{env_name}: {key}={value!r} must be a number")
    value = float(value)
    tail = f"; {fix}" if fix else ""
    if not math.isfinite(value):
        raise ConfigError(f"{env_name}: {key}={value} must be finite{tail}")
    if above is not None and not value > above:
        raise ConfigError(f"{env_name}: {key}={value} must be > {above}{tail}")
    if at_least is not None and value < at_least:
        raise ConfigError(f"{env_name}: {key}={value} must be >= {at_least}{tail}")
    if at_most is not None and value > at_most:
        raise ConfigError(f"{env_name}: {key}={value} must be <= {at_most}{tail}")
    return value


def check_bool(env_name: str, key: str, value: Any) -> bool:
    """A Python or NumPy bool."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise ConfigError(f"{env_name}: {key}={value!r} must be True or False")
    return bool(value)


def check_choice(env_name: str, key: str, value: Any, choices: Iterable[str]) -> str:
    """One of ``choices`` (strings), with a did-you-mean hint otherwise."""
    choices = list(choices)
    if value not in choices:
        match = difflib.get_close_matches(str(value), choices, n=1)
        hint = f"did you mean '{match[0]}'? " if match else ""
        raise ConfigError(f"{env_name}: {key}={value!r} is unknown; {hint}use one of {', '.join(map(repr, choices))}")
    return str(value)


def check_backend(env_name: str, value: Any) -> str:
    """``"cpu"`` or ``"pycuda"`` (the wrapper sets the real backend later). 2.7.1's ``"numba"``
    is accepted and means ``"pycuda"``: the env's CUDA kernels stand in for its Numba ones."""
    if value == "numba":
        return "pycuda"
    if value not in ("cpu", "pycuda"):
        raise ConfigError(f"{env_name}: env_backend={value!r} is unknown; use 'cpu' or 'pycuda'")
    return str(value)


def _is_numpy_int(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iu"


def _is_numpy_real(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"
