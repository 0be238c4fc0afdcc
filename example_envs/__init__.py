"""Example environments shipped with warp_drive; importing this package registers them by name.

``import example_envs`` registers every example env in warp_drive's module-level env registrar
(:data:`warp_drive.env.env_registrar`, also :data:`example_envs.registrar`) by import path, so
classes are imported only when asked for and an env whose module is missing fails only then. The
library finds them there (the interop adapters, ``EnvWrapper(env_name=...)``, the training
scripts), or in any registrar you pass::

    import example_envs
    from warp_drive.interop import WarpDriveVectorEnv

    envs = WarpDriveVectorEnv("cartpole", num_envs=8)
    TagContinuous = example_envs.get_example_env_class("tag_continuous")
    config_path = example_envs.get_default_config_path("tag_continuous")
    small = example_envs.get_cpu_sized_settings("tag_continuous")  # overrides for a 2-core CPU

Each env's folder holds its bundled run config and, for the training command line's cpu backend,
its CPU-sized settings (``cpu_sized.yaml``: a one-line ``summary`` and dotted ``overrides``).

The bottom half holds the small argument checks the example envs share: each raises
:class:`~warp_drive.errors.ConfigError` naming the env, the argument, the value seen and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from warp_drive.utils.checks import closest_match
from warp_drive.config._yaml import yaml_loads
from warp_drive.vocab.backends import canonical_backend
from warp_drive.vocab.registrar import EnvironmentRegistrar, env_registrar
from warp_drive.errors import ConfigError, UnknownEnvError

_HERE = Path(__file__).resolve().parent


class ExampleEnvSpec(NamedTuple):
    """Where an example env lives: ``"package.module:Class"`` and its run config file name (next to
    the module)."""

    import_path: str
    config_file: str = "run_config.yaml"

    def folder(self) -> Path:
        """The folder of the env's module (its run config and CPU-sized settings lie there)."""
        module = self.import_path.partition(":")[0]
        return _HERE.joinpath(*module.split(".")[1:-1])

    def config_path(self) -> Path:
        """The run config: ``config_file`` in the env's folder."""
        return self.folder() / self.config_file


class CpuSizedSettings(NamedTuple):
    """Settings that make an example env train in a minute or two on a 2-core CPU (its bundled run
    config is sized for a GPU): dotted overrides applied before the command line's own, and a
    one-line description of what they keep and change."""

    overrides: tuple[str, ...]
    summary: str


_EXAMPLE_ENVS: dict[str, ExampleEnvSpec] = {
    "tag_continuous": ExampleEnvSpec("example_envs.tag_continuous.tag_continuous:TagContinuous"),
    "tag_gridworld": ExampleEnvSpec("example_envs.tag_gridworld.tag_gridworld:TagGridWorld"),
    "tag_gridworld_with_reset_pool": ExampleEnvSpec(
        "example_envs.tag_gridworld.tag_gridworld:TagGridWorldWithResetPool",
        "run_config_with_reset_pool.yaml",
    ),
    "dummy_env": ExampleEnvSpec("example_envs.dummy_env.dummy_env:DummyEnv"),
    # the single-agent classic-control envs (example_envs/classic_control/<env>/<env>.py)
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
    # the multi-agent particle envs of mpe2 (example_envs/mpe/<env>/<env>.py)
    "mpe_simple_spread": ExampleEnvSpec("example_envs.mpe.simple_spread.simple_spread:MpeSimpleSpreadEnv"),
    "mpe_simple_speaker_listener": ExampleEnvSpec(
        "example_envs.mpe.simple_speaker_listener.simple_speaker_listener:MpeSimpleSpeakerListenerEnv"
    ),
}


def register_example_envs(target: EnvironmentRegistrar) -> EnvironmentRegistrar:
    """Register every example env (by import path, with its run config) in ``target``; returns it."""
    for name, spec in _EXAMPLE_ENVS.items():
        target.register(name, spec.import_path, run_config=spec.config_path())
    return target


#: The registrar the example envs registered in: warp_drive's module-level one.
registrar = register_example_envs(env_registrar)


def example_env_names() -> list[str]:
    """Every name :func:`get_example_env_class` accepts."""
    return sorted(_EXAMPLE_ENVS)


def _check_name(name: str) -> str:
    key = str(name).lower()
    if key not in _EXAMPLE_ENVS:
        match = closest_match(key, _EXAMPLE_ENVS)
        hint = f"did you mean '{match}'? " if match else ""
        raise UnknownEnvError(f"unknown example env '{name}'; {hint}known: {', '.join(sorted(_EXAMPLE_ENVS))}")
    if not registrar.has_env(key):  # an entry added to the table after import
        spec = _EXAMPLE_ENVS[key]
        registrar.register(key, spec.import_path, run_config=spec.config_path())
    return key


def get_example_env_class(name: str) -> type:
    """The example env class registered under ``name`` (imported on first use).

    Raises:
        ConfigError: ``name`` is unknown (:class:`~warp_drive.errors.UnknownEnvError`), or its
            module cannot be imported.
    """
    return registrar.get(_check_name(name))


def get_default_config_path(name: str) -> Path:
    """Path of the run config YAML shipped next to the env ``name``.

    Raises:
        ConfigError: ``name`` is unknown or the config file does not exist.
    """
    return registrar.run_config_path(_check_name(name))


def get_cpu_sized_settings(name: str) -> CpuSizedSettings | None:
    """The CPU-sized settings of the env ``name`` (``cpu_sized.yaml`` in its folder), or None where
    it has none.

    Raises:
        ConfigError: ``name`` is unknown.
    """
    path = _EXAMPLE_ENVS[_check_name(name)].folder() / "cpu_sized.yaml"
    if not path.is_file():
        return None
    data = yaml_loads(path.read_text())
    return CpuSizedSettings(tuple(str(o) for o in data["overrides"]), str(data["summary"]))


# ----------------------------------------------------------------------------- argument checks
def reject_unknown_kwargs(env_name: str, unknown: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """Raise ConfigError for the first unknown keyword argument, with a did-you-mean hint."""
    accepted = list(accepted)
    for key, value in unknown.items():
        match = closest_match(key, accepted)
        hint = f"did you mean '{match}'?" if match else f"accepted: {', '.join(accepted)}"
        raise ConfigError(f"{env_name}: unknown argument {key}={value!r}; {hint}")


def whole_number(value: Any) -> Any:
    """``value`` as an int where it is a finite float with an integral value (``1e3``, ``10.0``: how YAML and
    JSON may write an integer), else unchanged (the config keys' rule, :func:`warp_drive.utils.checks.as_int`)."""
    if isinstance(value, float) or (_is_numpy_real(value) and value.dtype.kind == "f"):
        if math.isfinite(value) and float(value).is_integer():
            return int(value)
    return value


def check_int(env_name: str, key: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (bools refused; a float with an integral value, e.g. ``1e3``, is taken as that integer)
    within ``[minimum, maximum]``."""
    value = whole_number(value)
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
        match = closest_match(str(value), choices)
        hint = f"did you mean '{match}'? " if match else ""
        raise ConfigError(f"{env_name}: {key}={value!r} is unknown; {hint}use one of {', '.join(map(repr, choices))}")
    return str(value)


def check_backend(env_name: str, value: Any) -> str:
    """``"cpu"``, ``"pycuda"`` or ``"numba"`` from any accepted spelling (:mod:`warp_drive.vocab.backends`;
    the wrapper sets the real backend later)."""
    return canonical_backend(value, f"{env_name}: env_backend")


def _is_numpy_int(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iu"


def _is_numpy_real(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"
