"""EnvironmentRegistrar: env classes and their CUDA sources by name (instance state only)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from warp_drive.errors import ConfigError, DataNotFoundError

_BACKENDS = {"cpu": "cpu", "pycuda": "pycuda", "cuda": "pycuda", "gpu": "pycuda"}


def _backend(name: str) -> str:
    try:
        return _BACKENDS[name.lower()]
    except (KeyError, AttributeError):
        raise ConfigError(f"env_backend {name!r} is unknown; use 'pycuda' or 'cpu'") from None


class EnvironmentRegistrar:
    """Maps env names (case-insensitive) to classes and optional CUDA source paths.

    Unlike the reference, every registrar holds its own tables, so two registrars never share
    state. Envs are dual mode: one class serves both backends.
    """

    def __init__(self) -> None:
        self._classes: dict[str, dict[str, type]] = {"cpu": {}, "pycuda": {}}
        self._sources: dict[str, Path] = {}

    def add(self, env_backend: str | list[str] = ("cpu", "pycuda"), cuda_env_src_path: str | None = None) -> Callable[[type], type]:
        """Class decorator registering ``cls`` under ``cls.name.lower()``."""
        backends = [env_backend] if isinstance(env_backend, str) else list(env_backend)

        def register(cls: type) -> type:
            name = getattr(cls, "name", "")
            if not name:
                raise ConfigError(f"{cls.__name__} needs a class attribute 'name' to be registered")
            for b in backends:
                table = self._classes[_backend(b)]
                if name.lower() in table:
                    raise ConfigError(f"env '{name}' is already registered for backend '{b}'")
                table[name.lower()] = cls
            if cuda_env_src_path is not None:
                self.add_cuda_env_src_path(name, cuda_env_src_path)
            return cls

        return register

    def get(self, name: str, env_backend: str = "cpu") -> type:
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
        """Register the ``.cu`` file holding env ``name``'s kernels."""
        _backend(env_backend)
        path = Path(cuda_env_src_path)
        if path.suffix != ".cu":
            raise ConfigError(f"CUDA source path must end in .cu, got {str(path)!r}")
        self._sources[name.lower()] = path

    def get_cuda_env_src_path(self, name: str, env_backend: str = "pycuda") -> Path:
        _backend(env_backend)
        try:
            return self._sources[name.lower()]
        except KeyError:
            raise DataNotFoundError(f"no CUDA source registered for env '{name}'") from None


def create_env(registrar: EnvironmentRegistrar, name: str, env_backend: str, config: dict[str, Any] | None) -> Any:
    """Instantiate a registered env with its config."""
    return registrar.get(name, env_backend)(**(config or {}))
