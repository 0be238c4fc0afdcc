"""EnvironmentRegistrar: env classes, their CUDA sources and run configs by name (instance state only).

The library finds envs by name only through a registrar: the caller passes one (``env_registrar=``
of :class:`~warp_drive.env.env_wrapper.EnvWrapper` and of the interop adapters), or the module-level
:data:`env_registrar` is used. Env packages register themselves; the bundled examples do so when
``example_envs`` is imported (lazily: by import path, so nothing is imported until asked)::

    import example_envs                                   # registers the example envs
    from warp_drive.env import env_registrar
    TagContinuous = env_registrar.get("tag_continuous")

    my_registrar = EnvironmentRegistrar()
    my_registrar.register("my_env", "my_package.my_env:MyEnv", run_config="/path/to/run_config.yaml")
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from typing import Any, Callable

from warp_drive.vocab.backends import registrar_table
from warp_drive.errors import ConfigError, UnknownEnvError

logger = logging.getLogger(__name__)


class EnvironmentRegistrar:
    """Maps env names (case-insensitive) to classes, optional CUDA source paths and run configs.

    2.7.1's calls work unchanged (:meth:`add`, a class decorator, :meth:`get`, :meth:`has_env`,
    :meth:`add_cuda_env_src_path`, :meth:`get_cuda_env_src_path`). :meth:`register` adds an env by
    import path (imported on first :meth:`get`) with its run config, the way env packages register themselves.

    Unlike 2.7.1, every registrar holds its own tables, so two registrars never share state.
    Envs are dual mode: by default one class is registered for both backends.
    """

    def __init__(self) -> None:
        self._classes: dict[str, dict[str, Any]] = {"cpu": {}, "pycuda": {}, "numba": {}}
        self._sources: dict[str, dict[str, Any]] = {"pycuda": {}, "numba": {}}
        self._run_configs: dict[str, Path] = {}

    def add(
        self, env_backend: str | list[str] | tuple[str, ...] = ("cpu", "pycuda"), cuda_env_src_path: str | None = None
    ) -> Callable[[type], type]:
        """Class decorator registering ``cls`` under ``cls.name.lower()`` for each backend."""
        backends = [env_backend] if isinstance(env_backend, str) else list(env_backend)
        tables = [registrar_table(b) for b in backends]

        def register(cls: type) -> type:
            name = getattr(cls, "name", "")
            if not name:
                raise ConfigError(f"{cls.__name__} needs a class attribute 'name' to be registered")
            for b, table_name in zip(backends, tables):
                table = self._classes[table_name]
                if name.lower() in table:
                    raise ConfigError(
                        f"env '{name}' is already registered for backend '{b}'; give {cls.__name__} another name"
                    )
                table[name.lower()] = cls
            if cuda_env_src_path is not None:  # under each GPU table named (pycuda when none is)
                for table_name in dict.fromkeys(t for t in tables if t != "cpu") or ["pycuda"]:
                    self.add_cuda_env_src_path(name, cuda_env_src_path, env_backend=table_name)
            return cls

        return register

    def register(
        self,
        name: str,
        env_class: type | str,
        run_config: str | os.PathLike[str] | None = None,
        env_backend: str | list[str] | tuple[str, ...] = ("cpu", "pycuda"),
    ) -> None:
        """Register a dual-mode env class under ``name`` (registering the same target again is a no-op).

        Args:
            name: Lookup name (case-insensitive), e.g. ``"tag_continuous"``.
            env_class: The class, or ``"package.module:ClassName"`` (imported on first use).
            run_config: Path of the env's run config YAML (:meth:`run_config_path`).
            env_backend: Backends the class runs on.

        Raises:
            ConfigError: ``name`` is taken by another class, or ``env_class`` is malformed.
        """
        if isinstance(env_class, str) and (":" not in env_class or not all(env_class.partition(":")[::2])):
            raise ConfigError(f"env class {env_class!r} must be a class or 'package.module:ClassName'")
        key = str(name).lower()
        backends = [env_backend] if isinstance(env_backend, str) else list(env_backend)
        for table_name in (registrar_table(b) for b in backends):
            table = self._classes[table_name]
            if key in table and table[key] is not env_class and table[key] != env_class:
                raise ConfigError(f"env '{name}' is already registered as {_label(table[key])}; choose another name")
            table[key] = env_class
        if run_config is not None:
            self._run_configs[key] = Path(run_config)

    def get(self, name: str, env_backend: str = "cpu") -> type:
        """The class registered as ``name`` for ``env_backend`` (imported now when registered by path).

        Raises:
            UnknownEnvError: no env of that name (with a did-you-mean hint and the known names).
            ConfigError: its module failed to import or lacks the class.
        """
        table = self._classes[registrar_table(env_backend)]
        key = str(name).lower()
        if key not in table:
            raise UnknownEnvError(self._unknown_message(name, env_backend, list(table)))
        target = table[key]
        if isinstance(target, str):
            target = _import_class(name, target)
            for other in self._classes.values():  # resolve once, for every backend it is under
                if other.get(key) == table[key]:
                    other[key] = target
        return target

    def has_env(self, name: str, env_backend: str = "cpu") -> bool:
        return str(name).lower() in self._classes[registrar_table(env_backend)]

    def env_names(self, env_backend: str = "cpu") -> list[str]:
        """Every name registered for ``env_backend``, sorted."""
        return sorted(self._classes[registrar_table(env_backend)])

    def run_config_path(self, name: str) -> Path:
        """The run config registered with env ``name``.

        Raises:
            UnknownEnvError: no env of that name.
            ConfigError: the env has no run config, or its file does not exist.
        """
        key = str(name).lower()
        if not any(key in table for table in self._classes.values()):
            raise UnknownEnvError(self._unknown_message(name, "cpu", self.env_names()))
        path = self._run_configs.get(key)
        if path is None:
            raise ConfigError(f"env '{name}' was registered without a run config; pass a config file instead")
        if not path.is_file():
            raise ConfigError(f"env '{name}' has no run config at {path}")
        return path

    def _unknown_message(self, name: str, env_backend: str, known: list[str]) -> str:
        from warp_drive.utils.checks import closest_match

        match = closest_match(str(name).lower(), known)
        hint = f"did you mean '{match}'? " if match else ""
        tail = "" if known else " (the example envs register themselves when `example_envs` is imported)"
        return (f"no env named '{name}' for backend '{env_backend}'; {hint}registered: "
                f"{', '.join(sorted(known)) or 'none'}{tail}")

    def add_cuda_env_src_path(self, name: str, cuda_env_src_path: str | os.PathLike[str], env_backend: str = "pycuda") -> None:
        """Register the source of env ``name``'s kernels: a ``.cu`` file (pycuda), or a dotted module
        path holding its Numba step ``Numba<name>Step`` (``env_backend="numba"``, 2.7.1's way)."""
        table = registrar_table(env_backend)
        if table == "cpu":
            raise ConfigError(f"a CUDA source is registered for a GPU backend, not '{env_backend}'; use env_backend='pycuda'")
        if table == "numba":
            value: Any = str(cuda_env_src_path)
            if "/" in value or value.endswith(".cu"):
                raise ConfigError(
                    f"a Numba env source is a dotted module path, got {value!r}; register a .cu file with "
                    f"env_backend='pycuda'"
                )
        else:
            value = Path(cuda_env_src_path)
            if value.suffix != ".cu":
                raise ConfigError(f"CUDA source path must end in .cu, got {str(value)!r}")
        if name.lower() in self._sources[table]:
            logger.warning("env '%s' already had a %s source; replacing it with %s", name, table, value)
        self._sources[table][name.lower()] = value

    def get_cuda_env_src_path(self, name: str, env_backend: str = "pycuda") -> Any:
        """The registered source of env ``name`` (a Path for pycuda), or None."""
        table = registrar_table(env_backend)
        if table == "cpu":
            raise ConfigError("CUDA sources are registered for env_backend='pycuda'; 'cpu' has none")
        return self._sources[table].get(name.lower())


def _label(target: Any) -> str:
    return target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"


def _import_class(name: str, import_path: str) -> type:
    module_name, _, class_name = import_path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"env '{name}' lives in {module_name}, which failed to import: {err}") from err
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ConfigError(f"env '{name}': {module_name} has no class {class_name}") from None


#: The module-level registrar, as in 2.7.1: the default of every lookup by name. Env packages
#: register themselves here (``import example_envs``).
env_registrar = EnvironmentRegistrar()
