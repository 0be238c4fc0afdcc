"""EnvironmentRegistrar: env classes and their CUDA sources by name (instance state only)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable

from warp_drive.errors import ConfigError, DataNotFoundError

logger = logging.getLogger(__name__)

#: Backend names accepted by the registrar -> the table they use. "numba" keeps its own tables
#: (2.7.1 code registers Numba classes and module paths); the EnvWrapper runs such envs on pycuda.
_BACKENDS = {"cpu": "cpu", "pycuda": "pycuda", "cuda": "pycuda", "gpu": "pycuda", "numba": "numba"}


def _backend(name: Any) -> str:
    try:
        return _BACKENDS[name.lower()]
    except (KeyError, AttributeError):
        raise ConfigError(f"env_backend {name!r} is unknown; use 'pycuda' or 'cpu'") from None


class EnvironmentRegistrar:
    """Maps env names (case-insensitive) to classes and optional CUDA source paths.

    The calls of 2.7.1 work unchanged: ``add(env_backend=..., cuda_env_src_path=...)`` (a class
    decorator), ``get(name, env_backend)``, ``has_env(name, env_backend)``,
    ``add_cuda_env_src_path(name, path, env_backend="pycuda")`` and
    ``get_cuda_env_src_path(name, env_backend="pycuda")`` (None when nothing is registered).

    Unlike 2.7.1, every registrar holds its own tables, so two registrars never share state.
    Envs are dual mode: by default one class is registered for both backends.
    """

    def __init__(self) -> None:
        self._classes: dict[str, dict[str, type]] = {"cpu": {}, "pycuda": {}, "numba": {}}
        self._sources: dict[str, dict[str, Any]] = {"pycuda": {}, "numba": {}}

    def add(
        self, env_backend: str | list[str] | tuple[str, ...] = ("cpu", "pycuda"), cuda_env_src_path: str | None = None
    ) -> Callable[[type], type]:
        """Class decorator registering ``cls`` under ``cls.name.lower()`` for each backend."""
        backends = [env_backend] if isinstance(env_backend, str) else list(env_backend)
        tables = [_backend(b) for b in backends]

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
            if cuda_env_src_path is not None:
                for table_name in dict.fromkeys(t for t in tables if t != "cpu"):
                    self.add_cuda_env_src_path(name, cuda_env_src_path, env_backend=table_name)
                if all(t == "cpu" for t in tables):
                    self.add_cuda_env_src_path(name, cuda_env_src_path)
            return cls

        return register

    def get(self, name: str, env_backend: str = "cpu") -> type:
        """The class registered as ``name`` for ``env_backend``."""
        table = self._classes[_backend(env_backend)]
        try:
            return table[name.lower()]
        except KeyError:
            raise DataNotFoundError(
                f"no env named '{name}' for backend '{env_backend}'; registered: {', '.join(table) or 'none'}"
            ) from None

    def has_env(self, name: str, env_backend: str = "cpu") -> bool:
        return name.lower() in self._classes[_backend(env_backend)]

    def add_cuda_env_src_path(self, name: str, cuda_env_src_path: str | os.PathLike[str], env_backend: str = "pycuda") -> None:
        """Register the source of env ``name``'s kernels: a ``.cu`` file (pycuda), or, for code
        written for 2.7.1's Numba backend, a dotted module path (kept, but warp_drive has no Numba
        backend: such an env runs on pycuda and needs a ``.cu`` source too)."""
        table = _backend(env_backend)
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
        table = _backend(env_backend)
        if table == "cpu":
            raise ConfigError("CUDA sources are registered for env_backend='pycuda'; 'cpu' has none")
        return self._sources[table].get(name.lower())


#: A module-level registrar, as in 2.7.1 (instances do not share state: create your own freely).
env_registrar = EnvironmentRegistrar()


def create_env(registrar: EnvironmentRegistrar, name: str, env_backend: str, config: dict[str, Any] | None) -> Any:
    """Instantiate a registered env with its config."""
    return registrar.get(name, env_backend)(**(config or {}))
