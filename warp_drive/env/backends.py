"""Backend names: the one table of accepted spellings and what each runs on.

Run configs name two backends, ``"pycuda"`` (CUDA kernels on a GPU) and ``"cpu"`` (NumPy twins);
every place that reads a backend name resolves it here. ``EnvWrapper(env_backend="numba")`` is the
Numba backend (an env's Numba step on the same store, :mod:`warp_drive.managers.numba_function_manager`);
a run config's ``env_backend: numba`` still trains on pycuda (the trainer does not build Numba envs yet).
"""

from __future__ import annotations

from typing import Any

from warp_drive.errors import ConfigError

#: The backends, in order of preference.
BACKENDS = ("pycuda", "cpu")
#: Accepted spelling -> backend of a run config. ``"numba"`` (2.7.1's second GPU backend) trains on pycuda;
#: the EnvWrapper alone runs it as the Numba backend (``env_wrapper.resolve_backend``).
BACKEND_ALIASES: dict[str, str] = {"pycuda": "pycuda", "cuda": "pycuda", "gpu": "pycuda", "numba": "pycuda", "cpu": "cpu"}


def canonical_backend(name: Any, what: str = "env_backend") -> str:
    """``"pycuda"`` or ``"cpu"`` for an accepted spelling (case-insensitive).

    Raises:
        ConfigError: an unknown name, with a did-you-mean hint.
    """
    key = name.lower() if isinstance(name, str) else None
    if key in BACKEND_ALIASES:
        return BACKEND_ALIASES[key]
    from warp_drive.config._checks import closest_match

    match = closest_match(str(name).lower(), BACKEND_ALIASES)
    hint = f"did you mean '{match}'? " if match else ""
    raise ConfigError(f"{what}={name!r} is unknown; {hint}use 'pycuda' or 'cpu'")


def is_numba(name: Any) -> bool:
    """True for 2.7.1's ``"numba"`` (any case)."""
    return isinstance(name, str) and name.lower() == "numba"


def registrar_table(name: Any) -> str:
    """The registrar table a backend name uses: ``"cpu"``, ``"pycuda"``, or ``"numba"`` (2.7.1 code
    registers Numba classes and module paths in tables of their own; they run on pycuda).

    Raises:
        ConfigError: an unknown name.
    """
    return "numba" if is_numba(name) else canonical_backend(name)
