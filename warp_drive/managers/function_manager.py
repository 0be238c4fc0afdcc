"""FunctionManager (launch geometry, function registry, argument checks) and FunctionFeed.

Backends: :class:`CPUFunctionManager` (NumPy twins of the core kernels, here) and
:class:`~warp_drive.managers.pycuda_function_manager.PyCUDAFunctionManager` (nvcc + PyCUDA).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from warp_drive.compat271.kernels import COMPAT_FUNCTIONS
from warp_drive.cuda.compiler import threads_per_block
from warp_drive.cuda.signature import KernelParam
from warp_drive.errors import ConfigError, DataNotFoundError, GeometryError, KernelSignatureError
from warp_drive.managers.cpu_kernels import CORE_KERNELS
from warp_drive.managers.data_manager import positive_int

#: Names of the core service kernels (CUDA ``core_service.cuh``; their NumPy twins in ``cpu_kernels.py``).
DEFAULT_FUNCTIONS: tuple[str, ...] = tuple(n for n in CORE_KERNELS if n not in COMPAT_FUNCTIONS)

#: Where an argument spec ``(name, source)`` is read from: the data manager's method per source.
_SOURCES = {"d": "device_data", "device": "device_data", "m": "meta_info", "meta": "meta_info",
            "s": "shared_constant", "shared": "shared_constant"}


def arg_name(spec: Any) -> str:
    """The data name of an argument spec (``"x"`` or ``("x", "meta")``)."""
    return spec if isinstance(spec, str) else spec[0]


class FunctionFeed:
    """Binds kernel arguments by data name.

    ``feed(["loc_x", ("episode_length", "meta"), ("kTable", "shared")])`` returns the kernel
    arguments: tensors for arrays, values for scalars, meta info and shared constants. Results are
    cached per argument list and invalidated whenever the data manager gains arrays, so later
    changes are never ignored.
    """

    def __init__(self, data_manager: Any) -> None:
        self._dm = data_manager
        self._cache: dict[tuple, tuple[int, list[Any]]] = {}

    def resolve(self, spec: Any) -> Any:
        """Value of one argument spec."""
        if isinstance(spec, str):
            return self._dm.device_data(spec)
        if isinstance(spec, (tuple, list)) and len(spec) == 2 and spec[1] in _SOURCES:
            return getattr(self._dm, _SOURCES[spec[1]])(spec[0])
        raise ConfigError(
            f"kernel argument spec {spec!r} is not understood; use 'name' or (name, 'device'|'meta'|'shared')"
        )

    def __call__(self, arguments: Sequence[Any]) -> list[Any]:
        key = tuple(a if isinstance(a, str) else tuple(a) for a in arguments)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == self._dm.version:
            return hit[1]
        values = [self.resolve(a) for a in arguments]
        self._cache[key] = (self._dm.version, values)
        return values


class FunctionManager:
    """Launch geometry and a registry of functions, shared by both backends.

    Args:
        num_agents: agents per env (N).
        num_envs: env replicas (E).
        blocks_per_env: CUDA blocks per env; each holds ceil(N / blocks_per_env) threads.
        process_id: rank of this process (2.7.1's argument; not used here).
    """

    has_kernels = False  # True when functions are compiled CUDA kernels

    def __init__(self, num_agents: int = 1, num_envs: int = 1, blocks_per_env: int = 1, process_id: int = 0) -> None:
        self._num_agents = positive_int("num_agents", num_agents)
        self._num_envs = positive_int("num_envs", num_envs)
        self._blocks_per_env = positive_int("blocks_per_env", blocks_per_env)
        if blocks_per_env > num_agents:
            raise GeometryError(
                f"blocks_per_env={blocks_per_env} exceeds num_agents={num_agents}; use at most one block per agent"
            )
        self._block = (threads_per_block(self._num_agents, self._blocks_per_env), 1, 1)
        self._grid = (self._num_envs * self._blocks_per_env, 1)
        self._functions: dict[str, Any] = {}
        self._signatures: dict[str, list[KernelParam]] = {}

    # ------------------------------------------------------------------ geometry
    @property
    def num_agents(self) -> int:
        return self._num_agents

    @property
    def num_envs(self) -> int:
        return self._num_envs

    @property
    def blocks_per_env(self) -> int:
        return self._blocks_per_env

    @property
    def block(self) -> tuple[int, int, int]:
        """Threads per block: ceil(num_agents / blocks_per_env)."""
        return self._block

    @property
    def grid(self) -> tuple[int, int]:
        """Blocks: num_envs * blocks_per_env."""
        return self._grid

    # ------------------------------------------------------------------ registry
    @property
    def get_function(self) -> Callable[[str], Any]:
        """``fm.get_function(name)`` returns a loaded function (property, as in the reference)."""
        return self._get_function

    def _get_function(self, name: str) -> Any:
        try:
            return self._functions[name]
        except KeyError:
            raise DataNotFoundError(
                f"function '{name}' is not initialized; initialized: {', '.join(self._functions) or 'none'}. "
                f"Call initialize_functions(['{name}'])"
            ) from None

    def is_initialized(self, name: str) -> bool:
        return name in self._functions

    @property
    def function_names(self) -> list[str]:
        return list(self._functions)

    def initialize_default_functions(self) -> None:
        """Load every core service kernel, and 2.7.1's built-in kernels where the module holds them
        (:meth:`has_compat_271_kernels`)."""
        compat = COMPAT_FUNCTIONS if self.has_compat_271_kernels() else ()
        self.initialize_functions([n for n in (*DEFAULT_FUNCTIONS, *compat) if n not in self._functions])

    def has_compat_271_kernels(self) -> bool:
        """True when WarpDrive 2.7.1's built-in kernels (``compat_271.cuh``) can be launched: always
        on the CPU backend (NumPy twins); on the GPU when the loaded module was built with them
        (:mod:`warp_drive.compat271.kernels`)."""
        return True

    def initialize_functions(self, func_names: Sequence[str]) -> None:
        for name in func_names:
            if name not in self._functions:
                self._functions[name] = self._load_function(name)

    def _load_function(self, name: str) -> Any:
        raise NotImplementedError

    def launch(self, name: str, args: Sequence[Any], grid: Any = None, block: Any = None) -> None:
        """Run function ``name`` on ``args`` (default geometry: one env per block)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ argument checks
    def check_arguments(self, name: str, specs: Sequence[Any], data_manager: Any, skip: int = 0) -> None:
        """Check data-name bound arguments against the kernel's parsed signature (after its first
        ``skip`` parameters, which the caller binds itself).

        Raises:
            KernelSignatureError: wrong count, pointer where a scalar is expected (or the
                reverse), float data for an int parameter (or the reverse), or arguments that
                appear in a different position than the kernel's parameter of the same name.
        """
        params = self._signatures.get(name)
        if params is None:
            return
        params = params[skip:]
        names = [arg_name(s) for s in specs]
        if len(specs) != len(params):
            missing = [p.name for p in params[len(specs):]]
            extra = names[len(params):]
            detail = f"; missing: {missing}" if missing else f"; extra: {extra}"
            raise KernelSignatureError(f"{name} expects {len(params)} args, got {len(specs)}{detail}")
        feed = FunctionFeed(data_manager)
        norm = {_normalize(n): i for i, n in enumerate(names)}
        for i, (spec, param) in enumerate(zip(specs, params)):
            j = norm.get(_normalize(param.name))
            if j is not None and j != i and _normalize(names[i]) != _normalize(param.name):
                raise KernelSignatureError(
                    f"{name}: parameter {i} '{param.name}' is bound to '{names[i]}', but '{names[j]}' is "
                    f"passed at position {j}; the argument order does not match the kernel"
                )
            _check_one(name, i, names[i], feed.resolve(spec), param)


def _normalize(name: str) -> str:
    return name.removesuffix("_arr").strip("_").lower()


def _check_one(kernel: str, i: int, data_name: str, value: Any, param: KernelParam) -> None:
    where = f"{kernel}: parameter {i} '{param.ctype}{' *' if param.is_pointer else ''} {param.name}' bound to '{data_name}'"
    if param.is_pointer:
        if not isinstance(value, torch.Tensor):
            raise KernelSignatureError(f"{where} expects an array, got the scalar {value!r}")
        kind = param.base_kind
        if kind == "float" and value.dtype != torch.float32 or kind in ("int", "uint") and value.dtype != torch.int32:
            raise KernelSignatureError(f"{where} expects {param.ctype} data, got {value.dtype}")
    else:
        if isinstance(value, torch.Tensor):
            raise KernelSignatureError(f"{where} expects a scalar, got an array of shape {tuple(value.shape)}")
        is_float = isinstance(value, (float, np.floating))
        if param.code in ("f", "d") and not is_float or param.code not in ("f", "d") and is_float:
            raise KernelSignatureError(f"{where} expects {param.ctype}, got {type(value).__name__} {value!r}")


class PythonFunction:
    """A function of the cpu backend, callable like a kernel of the pycuda backend.

    ``f(*args, block=..., grid=..., stream=None, shared=0)`` runs the NumPy function on the
    arguments (tensors become NumPy views of the same memory); the launch geometry is accepted
    and ignored, since the NumPy twins cover every env and agent at once.
    """

    __slots__ = ("name", "function")

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name = name
        self.function = function

    def __call__(self, *args: Any, block: Any = None, grid: Any = None, stream: Any = None, shared: int = 0) -> Any:
        return self.function(*[_to_numpy(a) for a in args])

    def __repr__(self) -> str:
        return f"PythonFunction({self.name!r})"


class CPUFunctionManager(FunctionManager):
    """Runs the NumPy twins of the core kernels (``cpu_kernels.CORE_KERNELS``).

    Env steps on this backend are the env's ``numpy_step``; extra Python functions can be added
    with :meth:`register_function`. ``get_function(name)`` returns a :class:`PythonFunction`.
    """

    backend = "cpu"

    def __init__(self, num_agents: int = 1, num_envs: int = 1, blocks_per_env: int = 1, process_id: int = 0) -> None:
        super().__init__(num_agents, num_envs, blocks_per_env, process_id)
        self._python_functions: dict[str, Callable[..., Any]] = {}

    def register_function(self, name: str, fn: Callable[..., Any]) -> None:
        """Make a Python function launchable by name."""
        self._python_functions[name] = fn

    def _load_function(self, name: str) -> Any:
        fn = self._python_functions.get(name) or CORE_KERNELS.get(name)
        if fn is None:
            raise DataNotFoundError(f"no CPU function named '{name}'; register it with register_function()")
        return PythonFunction(name, fn)

    def launch(self, name: str, args: Sequence[Any], grid: Any = None, block: Any = None) -> None:
        self._get_function(name)(*args)


def _to_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise KernelSignatureError(
                f"a {value.device} tensor was passed to a cpu-backend function; pass the data manager's "
                f"tensor (dm.device_data(name)), which lives in CPU memory on this backend"
            )
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return [_to_numpy(v) for v in value]
    return value


# 2.7.1's names for the base classes (its ``function_manager`` module held them all).
CUDAFunctionManager = FunctionManager
CUDAFunctionFeed = FunctionFeed

_SERVICE_ALIASES = {
    "CUDASampler": ("warp_drive.services.sampler", "Sampler"),
    "CUDAEnvironmentReset": ("warp_drive.services.environment_reset", "EnvironmentReset"),
    "CUDALogController": ("warp_drive.services.log_controller", "LogController"),
}


def __getattr__(name: str) -> Any:
    """2.7.1 imported the service base classes from this module; they live in their own modules
    here (which import this one), so they are looked up on first use."""
    if name in _SERVICE_ALIASES:
        import importlib

        module, attr = _SERVICE_ALIASES[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
