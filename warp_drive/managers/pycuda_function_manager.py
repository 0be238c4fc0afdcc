"""PyCUDAFunctionManager: compile (nvcc, cached), load and launch CUDA kernels.

pycuda is imported lazily, so this module can be imported (and documented) without it; using it
without pycuda or a GPU raises :class:`~warp_drive.errors.DeviceUnavailableError`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from warp_drive.cuda import core_dir
from warp_drive.cuda.compiler import DEFAULT_MAX_SHARED_BYTES, DEFAULT_OPTIONS, compile_cubin, render_source
from warp_drive.cuda.signature import parse_kernel_signatures
from warp_drive.errors import ConfigError, DataNotFoundError, GeometryError
from warp_drive.managers.function_manager import FunctionManager
from warp_drive.utils.device import device_attributes, init_cuda

logger = logging.getLogger(__name__)


def _core_signatures() -> dict:
    sigs: dict = {}
    for path in sorted(core_dir().glob("*.cuh")):
        sigs.update(parse_kernel_signatures(path.read_text()))
    return sigs


#: A kernel ``K`` that needs dynamic shared memory states how much in a device global named
#: ``K_dynamic_shared_bytes`` (``extern "C" __constant__ int``), computed by the CUDA source itself.
DYNAMIC_SHARED_SUFFIX = "_dynamic_shared_bytes"


class _Kernel:
    """A loaded kernel prepared with its parameter types, launched with tensor pointers.

    Launches pack the arguments with the prepared format and call pycuda's stateless launch
    directly (what ``prepared_async_call`` does after its per-call argument handling), which
    matters for eager loops: the sampler's launch is host-bound. Falls back to
    ``prepared_async_call`` on a pycuda without that entry point.
    """

    __slots__ = ("name", "function", "codes", "shared_bytes", "_launch", "_pack", "_format")

    def __init__(self, name: str, function: Any, codes: str, shared_bytes: int = 0) -> None:
        self.name = name
        self.function = function
        self.codes = codes
        self.shared_bytes = shared_bytes
        function.prepare(codes)
        self._launch = getattr(function, "_launch_kernel", None)
        self._format = getattr(function, "arg_format", None)
        try:
            from pycuda._pvt_struct import pack
        except ImportError:  # pragma: no cover - older pycuda
            pack = None
        self._pack = pack
        if self._format is None or self._pack is None or getattr(function, "texrefs", None):
            self._launch = None

    def __call__(self, grid: tuple, block: tuple, stream: Any, args: Sequence[Any]) -> None:
        values = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        if self._launch is not None:
            self._launch(grid, block, self._pack(self._format, *values), self.shared_bytes, stream)
        else:
            self.function.prepared_async_call(grid, block, stream, *values, shared_size=self.shared_bytes)


class PyCUDAFunctionManager(FunctionManager):
    """Compiles the core service layer together with an env's kernels and launches them.

    Args:
        num_agents, num_envs, blocks_per_env, process_id: see :class:`FunctionManager`.
        device_id: CUDA device (default: torch's current device).
    """

    backend = "pycuda"
    has_kernels = True

    def __init__(
        self,
        num_agents: int = 1,
        num_envs: int = 1,
        blocks_per_env: int = 1,
        process_id: int = 0,
        device_id: int | None = None,
    ) -> None:
        super().__init__(num_agents, num_envs, blocks_per_env, process_id)
        init_cuda(device_id)
        self._device_id = torch.cuda.current_device() if device_id is None else device_id
        self._attrs = attrs = device_attributes(self._device_id)
        self._arch = f"sm_{attrs['major']}{attrs['minor']}"
        max_threads = attrs["max_threads_per_block"]
        if self.block[0] > max_threads:
            need = -(-num_agents // max_threads)
            raise GeometryError(
                f"num_agents={num_agents} with blocks_per_env={blocks_per_env} needs {self.block[0]} threads "
                f"per block, above this device's limit of {max_threads}; set blocks_per_env={need} (or more)"
            )
        self._default_grid, self._default_block = self.grid, self.block
        self._module: Any = None
        self._source: str | None = None
        self.stream: Any = None  # a pycuda Stream to launch on (None: the legacy default stream)

    @property
    def max_shared_bytes(self) -> int:
        """Shared memory one block may use on this device (opt-in limit), as kernels see it in
        ``wkMaxSharedBytesPerBlock``."""
        attrs = self._attrs
        return int(attrs.get("max_shared_memory_per_block_optin") or attrs.get("max_shared_memory_per_block", DEFAULT_MAX_SHARED_BYTES))

    @property
    def arch(self) -> str:
        """Target architecture of the current device, e.g. ``sm_90``."""
        return self._arch

    @property
    def source(self) -> str | None:
        """The rendered translation unit of the loaded module."""
        return self._source

    # ------------------------------------------------------------------ building
    def compile_and_load_cuda(
        self,
        env_name: str | None = None,
        env_source: str | os.PathLike[str] | None = None,
        constants: Mapping[str, Any] | None = None,
        customized_env_registrar: Any = None,
        include_dirs: Sequence[str | os.PathLike[str]] = (),
        options: Sequence[str] = DEFAULT_OPTIONS,
        default_functions_included: bool = True,
        **legacy: Any,
    ) -> Path:
        """Render core + env source with the launch constants, compile (cached) and load it.

        Args:
            env_name: look the env's source up in ``customized_env_registrar`` when
                ``env_source`` is not given.
            env_source: path of the env's ``.cu`` file.
            constants: extra ``constexpr`` values for the prelude (the env's ``cuda_constants()``).
            include_dirs: extra include directories (the env's folder is added automatically).
            options: nvcc options.
            default_functions_included: also initialize the core service kernels.

        Returns:
            Path of the cached cubin.
        """
        for key in legacy:
            if key not in ("template_header_file", "template_runner_file", "template_path", "event_messenger"):
                raise ConfigError(f"compile_and_load_cuda() got an unexpected argument '{key}'")
        if env_source is None and env_name is not None:
            if customized_env_registrar is None:
                raise ConfigError(
                    f"no CUDA source given for env '{env_name}'; pass env_source= or a registrar holding it"
                )
            env_source = customized_env_registrar.get_cuda_env_src_path(env_name)
        dirs = list(include_dirs)
        if env_source is not None:
            dirs.append(Path(env_source).resolve().parent)
        source = render_source(
            self.num_envs, self.num_agents, self.blocks_per_env, env_source=env_source, constants=constants,
            max_shared_bytes=self.max_shared_bytes,
        )
        return self._build(source, dirs, options, default_functions_included)

    def load_cuda_from_source_code(
        self,
        code: str,
        default_functions_included: bool = True,
        constants: Mapping[str, Any] | None = None,
        options: Sequence[str] = DEFAULT_OPTIONS,
    ) -> Path:
        """Compile user kernels given as a string (after the prelude and the core layer)."""
        source = render_source(
            self.num_envs, self.num_agents, self.blocks_per_env, constants=constants, extra_code=code,
            max_shared_bytes=self.max_shared_bytes,
        )
        return self._build(source, [], options, default_functions_included)

    def load_cuda_from_binary_file(self, cubin: str | os.PathLike[str], default_functions_included: bool = True) -> None:
        """Load a prebuilt cubin/fatbin (kernel signatures are then not checked)."""
        import pycuda.driver as cuda

        self._set_module(cuda.module_from_file(str(cubin)), None, default_functions_included)

    def _build(self, source: str, dirs: list, options: Sequence[str], defaults: bool) -> Path:
        import pycuda.driver as cuda

        if self._module is not None:
            raise ConfigError("this function manager already holds a module; create a new manager")
        path = compile_cubin(source, self._arch, include_dirs=dirs, options=options)
        self._set_module(cuda.module_from_file(str(path)), source, defaults)
        return path

    def _set_module(self, module: Any, source: str | None, defaults: bool) -> None:
        self._module = module
        self._source = source
        self._signatures = _core_signatures()
        if source is not None:
            self._signatures.update(parse_kernel_signatures(source))
        if defaults:
            self.initialize_default_functions()

    # ------------------------------------------------------------------ functions
    def _load_function(self, name: str) -> Any:
        if self._module is None:
            raise ConfigError("no CUDA module loaded; call compile_and_load_cuda() first")
        import pycuda.driver as cuda

        try:
            function = self._module.get_function(name)
        except cuda.LogicError as err:
            raise DataNotFoundError(
                f"kernel '{name}' is not in the compiled module; is it declared extern \"C\" __global__?"
            ) from err
        params = self._signatures.get(name)
        if params is None:
            raise DataNotFoundError(f"cannot find the signature of kernel '{name}' in the rendered source")
        return _Kernel(name, function, "".join(p.code for p in params), self._dynamic_shared_bytes(name, function))

    def _dynamic_shared_bytes(self, name: str, function: Any) -> int:
        """Dynamic shared memory that kernel ``name`` declares (0 when it declares none); above the
        default 48 KiB the kernel is opted in, up to the device's limit."""
        import numpy as np
        import pycuda.driver as cuda

        try:
            pointer, _ = self._module.get_global(name + DYNAMIC_SHARED_SUFFIX)
        except cuda.LogicError:
            return 0
        value = np.zeros(1, np.int32)
        cuda.memcpy_dtoh(value, pointer)
        need = int(value[0])
        if need > self._attrs.get("max_shared_memory_per_block", DEFAULT_MAX_SHARED_BYTES):
            static = function.get_attribute(cuda.function_attribute.SHARED_SIZE_BYTES)
            limit = self.max_shared_bytes
            if need + static > limit:
                raise GeometryError(
                    f"kernel '{name}' needs {need + static} bytes of shared memory per block for "
                    f"num_agents={self.num_agents}; this device allows {limit}. Use fewer agents per env "
                    f"or more blocks_per_env (or a smaller configuration of the env's observation)"
                )
            function.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, need)
        logger.debug("kernel %s uses %d bytes of dynamic shared memory", name, need)
        return need

    def has_function(self, name: str) -> bool:
        """True when the loaded module defines kernel ``name``."""
        return name in self._signatures

    def launch(self, name: str, args: Sequence[Any], grid: Any = None, block: Any = None) -> None:
        kernel = self._functions.get(name) or self._get_function(name)
        grid = self._default_grid if grid is None else tuple(grid)
        block = self._default_block if block is None else tuple(block)
        kernel(grid, block, self.stream, args)

    def initialize_shared_constants(self, data_manager: Any, constant_names: Sequence[str]) -> None:
        """Copy host constants into ``__constant__`` symbols of the same names."""
        import numpy as np
        import pycuda.driver as cuda

        for name in constant_names:
            value = np.ascontiguousarray(data_manager.shared_constant(name))
            ptr, size = self._module.get_global(name)
            if value.nbytes != size:
                raise ConfigError(
                    f"shared constant '{name}' has {value.nbytes} bytes but the __constant__ symbol has {size}"
                )
            cuda.memcpy_htod(ptr, value)

    @property
    def cuda_function_names(self) -> list[str]:
        return self.function_names


CUDAFunctionManager = PyCUDAFunctionManager
