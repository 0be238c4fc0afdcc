"""Backend names: the one table of accepted spellings and what each runs on.

Three backends: ``"pycuda"`` (the env's CUDA C step on a GPU), ``"numba"`` (the env's Numba step,
compiled by numba-cuda, on the same store and with the same CUDA C services:
:mod:`warp_drive.managers.numba_function_manager`) and ``"cpu"`` (NumPy twins). Every place that reads a
backend name (run configs, the CLIs, the env wrapper, env constructors) resolves it here, so a run
config's ``trainer.env_backend: numba`` (or ``--backend numba``) trains on the env's Numba step.
"""

from __future__ import annotations

from typing import Any

from warp_drive.errors import ConfigError

#: The backends, in order of preference.
BACKENDS = ("pycuda", "numba", "cpu")
#: Accepted spelling -> backend.
BACKEND_ALIASES: dict[str, str] = {"pycuda": "pycuda", "cuda": "pycuda", "gpu": "pycuda", "numba": "numba", "cpu": "cpu"}


def canonical_backend(name: Any, what: str = "env_backend") -> str:
    """``"pycuda"``, ``"numba"`` or ``"cpu"`` for an accepted spelling (case-insensitive).

    Raises:
        ConfigError: an unknown name, with a did-you-mean hint.
    """
    key = name.lower() if isinstance(name, str) else None
    if key in BACKEND_ALIASES:
        return BACKEND_ALIASES[key]
    from warp_drive.utils.checks import closest_match

    match = closest_match(str(name).lower(), BACKEND_ALIASES)
    hint = f"did you mean '{match}'? " if match else ""
    raise ConfigError(f"{what}={name!r} is unknown; {hint}use 'pycuda', 'numba' or 'cpu'")


def is_numba(name: Any) -> bool:
    """True for 2.7.1's ``"numba"`` (any case)."""
    return isinstance(name, str) and name.lower() == "numba"


def registrar_table(name: Any) -> str:
    """The registrar table a backend name uses: ``"cpu"``, ``"pycuda"``, or ``"numba"`` (2.7.1 code
    registers Numba classes and module paths in tables of their own).

    Raises:
        ConfigError: an unknown name.
    """
    return "numba" if is_numba(name) else canonical_backend(name)


def uses_gpu(name: str) -> bool:
    """True when a canonical backend's env steps run on a GPU: pycuda always, numba unless Numba's CUDA
    simulator (``NUMBA_ENABLE_CUDASIM=1``) runs it on the CPU, its store then in CPU memory (CUDA graphs,
    NCCL and GPU placement do not apply). Reads the simulator setting without importing numba."""
    if name == "numba":
        import os

        return os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip().lower() in ("", "0", "false", "no")
    return name == "pycuda"
