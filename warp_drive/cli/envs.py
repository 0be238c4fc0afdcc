"""The envs the command lines name: the bundled examples and envs of your own package.

The one module of the cli that imports ``example_envs`` (which registers the bundled envs by name in
warp_drive's env registrar); the programs take env classes, run configs and CPU-sized settings from
here (:func:`resolve_env`) and hand the library env classes only.

A name given to ``--env`` (or as a run config's ``name``) is looked up in this order:

1. ``package.module:Class`` (it holds a colon): that class, imported now;
2. a bundled example env (``cartpole``), its 2.7.1 run-config name (``single_cartpole``) or its class name;
3. an env registered in warp_drive's env registrar (:data:`warp_drive.env.env_registrar`) by a module
   that ``--import MODULE`` imported (repeatable) before the lookup;
4. an entry point of the group :data:`ENTRY_POINT_GROUP` (``warp_drive.envs``) of an installed package:
   its name is the env name, its value ``package.module:Class``.

An env found by import path or entry point has its run config and CPU-sized settings next to its module
(``run_config.yaml``, ``cpu_sized.yaml``); a registered env has them next to the run config it was
registered with. ``cpu_sized.yaml`` holds a one-line ``summary`` and dotted ``overrides``, as the bundled
envs' files do (the training script applies it to ``--env`` runs on the cpu backend).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import example_envs
from warp_drive.utils.checks import closest_match
from warp_drive.config._yaml import yaml_loads
from warp_drive.vocab.registrar import EnvironmentRegistrar, env_registrar
from warp_drive.errors import ConfigError, EnvLoadError, UnknownEnvError

#: The entry-point group in which an installed package names its envs (``pyproject.toml``:
#: ``[project.entry-points."warp_drive.envs"]`` then ``my_env = "my_pkg.my_env:MyEnv"``).
ENTRY_POINT_GROUP = "warp_drive.envs"
#: The file of an env's CPU-sized settings, next to its run config (bundled envs: next to their module).
CPU_SIZED_FILE = "cpu_sized.yaml"

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
    # this project's configs for the fewest seconds to a target on a GPU (run_configs/*_fast.yaml)
    "single_cartpole_fast": "cartpole",
    "single_acrobot_fast": "acrobot",
    "single_mountain_car_fast": "mountain_car",
    "single_pendulum_fast": "pendulum",
    "single_continuous_mountain_car_fast": "continuous_mountain_car",
    # this project's MAPPO and IPPO configs, sized for the CPU (run_configs/{mappo,ippo}[_gru]_simple_spread.yaml)
    "mappo_simple_spread": "mpe_simple_spread",
    "ippo_simple_spread": "mpe_simple_spread",
    "mappo_gru_simple_spread": "mpe_simple_spread",
    "ippo_gru_simple_spread": "mpe_simple_spread",
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


@dataclass(frozen=True)
class ResolvedEnv:
    """An env a command line named, found: its class, where it came from, its run config and CPU-sized settings.

    Attributes:
        name: The name as given (``cartpole``, ``my_pkg.my_env:MyEnv``, a registered or entry-point name).
        env_class: The env class.
        origin: How it was found, for messages (``"example env"``, ``"import path"``, ...).
        run_config: Its run config file, or None where it has none (then ``--config`` is needed).
        cpu_sized: Its CPU-sized settings, or None.
        example_name: The example-env name of a bundled env, else None.
    """

    name: str
    env_class: type
    origin: str
    run_config: Path | None
    cpu_sized: example_envs.CpuSizedSettings | None
    example_name: str | None = None

    @property
    def import_path(self) -> str:
        """``package.module:Class`` of :attr:`env_class` (how a fresh process imports it)."""
        return f"{self.env_class.__module__}:{self.env_class.__qualname__}"

    def run_config_path(self) -> Path:
        """The env's run config.

        Raises:
            ConfigError: the env has none (naming where it was looked for and the fix).
        """
        if self.run_config is None or not self.run_config.is_file():
            where = f" (looked for {self.run_config})" if self.run_config is not None else ""
            raise ConfigError(f"env {self.name!r} ({self.origin}) has no run config{where}; put a run_config.yaml "
                              "next to its module (or register it with run_config=...), or pass --config my_run.yaml")
        return self.run_config

    def registrar(self) -> tuple[str, EnvironmentRegistrar | None]:
        """The name and registrar that find this env in a fresh process (the Lightning engine factory):
        the example name and None for a bundled env, else a registrar holding its import path."""
        if self.example_name is not None:
            return self.example_name, None
        registrar = EnvironmentRegistrar()
        registrar.register(self.name, self.import_path, run_config=self.run_config)
        return self.name, registrar


def import_env_modules(modules: Sequence[str] | None) -> None:
    """Import each module of ``--import`` (their import registers envs in warp_drive's env registrar).

    Raises:
        EnvLoadError: a module cannot be imported (naming it, the error and the fix).
    """
    for module in modules or ():
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - any failure of the user's module is reported by name
            raise EnvLoadError(f"--import {module}: importing it failed ({type(err).__name__}: {err}); name an "
                               "importable module (installed, or on PYTHONPATH) whose import registers your envs") from err


def resolve_env(name: str, imports: Sequence[str] | None = None) -> ResolvedEnv:
    """The env a command line names (module docstring: the order of the lookup), after importing ``imports``.

    Raises:
        EnvLoadError: an import path, ``--import`` module or entry point does not load.
        UnknownEnvError: nothing has that name (listing the known names and the ways to name your own env).
        ConfigError: its ``cpu_sized.yaml`` is malformed.
    """
    import_env_modules(imports)
    name = str(name)
    if ":" in name:
        return _from_module(name, _import_class(name, f"env {name!r}"), "import path")
    example = _example_name(name)
    if example is not None:
        settings = CPU_SIZED.get(example)
        return ResolvedEnv(name, example_envs.get_example_env_class(example), "example env",
                           example_envs.get_default_config_path(example), settings, example)
    if env_registrar.has_env(name) or env_registrar.has_env(name, "pycuda"):
        cls = env_registrar.get(name, "cpu" if env_registrar.has_env(name) else "pycuda")
        try:
            config: Path | None = env_registrar.run_config_path(name)
        except ConfigError:
            config = None
        folder = config.parent if config is not None else _module_folder(cls)
        return ResolvedEnv(name, cls, "registered env", config, read_cpu_sized(folder))
    for point in _entry_points():
        if point.name.lower() == name.lower():
            cls = _import_class(point.value, f"entry point {point.name!r} of group {ENTRY_POINT_GROUP!r}")
            return _from_module(name, cls, f"entry point of {_distribution(point)}")
    raise UnknownEnvError(_unknown_message(name, imports))


def env_class_for(name: str, imports: Sequence[str] | None = None) -> type:
    """The env class a run config ``name`` (or ``--env``) trains (:func:`resolve_env`)."""
    return resolve_env(name, imports).env_class


def default_config_path(name: str, imports: Sequence[str] | None = None) -> Path:
    """The run config of the env ``name`` (:func:`resolve_env`)."""
    return resolve_env(name, imports).run_config_path()


def example_env_names() -> list[str]:
    """The example envs' names (``--env``), sorted."""
    return example_envs.example_env_names()


def example_env_name(name: str) -> str:
    """The example-env registry name for a run config's ``name``.

    Accepts this project's names (``cartpole``), 2.7.1's run-config names (``single_cartpole``)
    and env class names (``ClassicControlCartPoleEnv``, the ``name`` of the classic-control
    configs in ``example_envs/classic_control/*/run_config.yaml``).

    Raises:
        ConfigError: no example env has that name (with a did-you-mean hint).
    """
    found = _example_name(name)
    if found is None:
        example_envs.get_example_env_class(REFERENCE_ENV_NAMES.get(name, name))  # raises the registry's error
        raise UnknownEnvError(f"unknown example env {name!r}")  # pragma: no cover - the line above raised
    return found


def read_cpu_sized(folder: Path) -> example_envs.CpuSizedSettings | None:
    """The CPU-sized settings in ``folder/cpu_sized.yaml`` (a ``summary`` line and a list of dotted
    ``overrides``), or None when there is no such file.

    Raises:
        ConfigError: the file is not that mapping (naming the file, the value and the fix).
    """
    path = folder / CPU_SIZED_FILE
    if not path.is_file():
        return None
    data = yaml_loads(path.read_text())
    overrides = data.get("overrides") if isinstance(data, dict) else None
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "=" in o for o in overrides):
        raise ConfigError(f"{path}: 'overrides' must be a list of dotted key=value strings "
                          f"(e.g. [\"trainer.num_envs=20\"]), got {overrides!r}")
    return example_envs.CpuSizedSettings(tuple(overrides), str(data.get("summary") or "smaller run"))


# ----------------------------------------------------------------------------- lookups
def _example_name(name: str) -> str | None:
    key = str(REFERENCE_ENV_NAMES.get(name, name)).lower()
    names = example_envs.example_env_names()
    if key in names:
        return key
    for candidate in names:  # a class name: import the envs until one matches
        try:
            if example_envs.get_example_env_class(candidate).__name__.lower() == str(name).lower():
                return candidate
        except ConfigError:
            continue
    return None


def _import_class(import_path: str, what: str) -> type:
    module_name, _, class_name = import_path.partition(":")
    if not module_name or not class_name:
        raise EnvLoadError(f"{what}: {import_path!r} is not of the form package.module:ClassName")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any failure of the user's module is reported by name
        raise EnvLoadError(f"{what}: importing {module_name} failed ({type(err).__name__}: {err}); install the "
                           "package that holds it or put its folder on PYTHONPATH") from err
    target = module
    for part in class_name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise EnvLoadError(f"{what}: {module_name} has no {class_name}; name a class defined in that module")
    if not inspect.isclass(target):
        raise EnvLoadError(f"{what}: {import_path} is a {type(target).__name__}, not an env class")
    return target


def _module_folder(cls: type) -> Path | None:
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        return None
    return Path(source).resolve().parent if source else None


def _from_module(name: str, cls: type, origin: str) -> ResolvedEnv:
    folder = _module_folder(cls)
    config = folder / "run_config.yaml" if folder is not None else None
    return ResolvedEnv(name, cls, origin, config, read_cpu_sized(folder) if folder is not None else None)


def _entry_points() -> list:
    return list(entry_points(group=ENTRY_POINT_GROUP))


def _distribution(point: object) -> str:
    dist = getattr(point, "dist", None)
    return f"package {dist.name}" if dist is not None else "an installed package"


def _unknown_message(name: str, imports: Sequence[str] | None) -> str:
    examples = example_envs.example_env_names()
    registered = sorted(set(env_registrar.env_names()) - set(examples))
    points = sorted(p.name for p in _entry_points())
    match = closest_match(name.lower(), [*examples, *registered, *points])
    hint = f"did you mean '{match}'? " if match else ""
    imported = f" (--import {', '.join(imports)} registered {', '.join(registered) or 'no env'})" if imports else ""
    return (f"unknown env {name!r}{imported}; {hint}example envs: {', '.join(examples)}"
            f"{'; registered: ' + ', '.join(registered) if registered else ''}"
            f"{'; entry points: ' + ', '.join(points) if points else ''}. Name your own env by import path "
            f"(--env my_pkg.my_env:MyEnv), --import the module that registers it, or give it an entry point "
            f"in the group '{ENTRY_POINT_GROUP}' (docs/config_reference.md, \"Your own env\")")
