"""PyCUDAFunctionManager: compile (nvcc, cached), load and launch CUDA kernels.

pycuda is imported lazily, so this module can be imported (and documented) without it; using it
without pycuda or a GPU raises :class:`~warp_drive.errors.DeviceUnavailableError`.

The kernel wrapper (``_Kernel``) lives in :mod:`warp_drive.managers.pycuda_kernel`; what serves
WarpDrive 2.7.1 code (env barrier checks, ``_compile`` of main files, when ``compat_271.cuh`` is
compiled in) in :mod:`warp_drive.compat271`.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from warp_drive.compat271 import kernels as kernels_271
from warp_drive.compat271.cuda_helpers import check_templates
from warp_drive.compat271.env_barrier import (
    ENV_BARRIER,
    _occupancy_blocks_per_sm,
    check_env_barrier_geometry,
    estimate_blocks_per_sm,
)
from warp_drive.compat271.main_files import binary_alias, binary_source, compile_main_file, shipped_main_file
from warp_drive.cuda import core_dir
from warp_drive.cuda.compiler import (
    DEFAULT_MAX_SHARED_BYTES,
    DEFAULT_OPTIONS,
    compile_cubin,
    env_include_dirs,
    render_source,
)
from warp_drive.cuda.signature import functions_calling, kernel_linkage, parse_kernel_signatures
from warp_drive.errors import ConfigError, DataNotFoundError, GeometryError, KernelNotBuiltError, KernelSignatureError
from warp_drive.managers.function_manager import DEFAULT_FUNCTIONS, FunctionManager
from warp_drive.managers.pycuda_kernel import _Kernel
from warp_drive.cuda.device import device_attributes, init_cuda

logger = logging.getLogger(__name__)


def _core_signatures(with_compat_271: bool) -> dict:
    """Kernel signatures of the core headers (2.7.1's ``compat_271.cuh`` only where built in)."""
    sigs: dict = {}
    for path in sorted(core_dir().glob("*.cuh")):
        if with_compat_271 or path.name != kernels_271.HEADER:
            sigs.update(parse_kernel_signatures(path.read_text()))
    return sigs


#: A kernel ``K`` that needs dynamic shared memory states how much in a device global named
#: ``K_dynamic_shared_bytes`` (``extern "C" __constant__ int``), computed by the CUDA source itself.
DYNAMIC_SHARED_SUFFIX = "_dynamic_shared_bytes"


def _module_constant(source: str | None, name: str, default: int) -> int:
    """Value of ``constexpr int name = N;`` / ``const int name = N;`` in a module's source."""
    if source:
        match = re.search(rf"\b{name}\s*=\s*(\d+)\s*;", source)
        if match:
            return int(match.group(1))
    return default


class PyCUDAFunctionManager(FunctionManager):
    """Compiles the core service layer together with an env's kernels and launches them.

    Args:
        num_agents, num_envs, blocks_per_env, process_id: see :class:`FunctionManager` (2.7.1's
            positional order).
        device_id: CUDA device (default: torch's current device).

    ``get_function(name)`` returns a kernel callable as in pycuda,
    ``f(*args, block=fm.block, grid=fm.grid)``; :meth:`launch` is the fast internal path.
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
        self._module: Any = None
        self._binary: Path | None = None  # the loaded cubin
        self._source: str | None = None
        self._foreign = False  # a binary built elsewhere: kernel signatures unknown
        self._compat_271 = False  # the module holds 2.7.1's kernels (compat_271.cuh)
        self._linkage: dict[str, bool] = {}
        self._barrier_kernels: set[str] = set()
        self._module_envs, self._module_bpe = self.num_envs, self.blocks_per_env
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
        template_header_file: str | None = None,
        template_runner_file: str | None = None,
        template_path: str | None = None,
        default_functions_included: bool = True,
        customized_env_registrar: Any = None,
        event_messenger: Any = None,
        *,
        env_source: str | os.PathLike[str] | None = None,
        constants: Mapping[str, Any] | None = None,
        include_dirs: Sequence[str | os.PathLike[str]] = (),
        options: Sequence[str] = DEFAULT_OPTIONS,
        compat_271: bool = False,
    ) -> Path:
        """Render core + env source with the launch constants, compile (cached) and load it.

        The positional parameters are 2.7.1's; ``template_*`` accept only 2.7.1's defaults (the prelude
        is rendered in memory: :func:`~warp_drive.compat271.cuda_helpers.check_templates`). Every process
        compiles (the cache serialises identical builds), so ``event_messenger`` is only set when given.

        Args:
            env_name: look the env's source up in ``customized_env_registrar`` when
                ``env_source`` is not given.
            default_functions_included: also initialize the core service kernels.
            customized_env_registrar: an ``EnvironmentRegistrar`` holding the env's ``.cu`` path.
            env_source: path of the env's ``.cu`` file.
            constants: extra ``constexpr`` values for the prelude (the env's ``cuda_constants()``).
            include_dirs: extra include directories (the env's folder is added automatically).
            options: nvcc options.
            compat_271: also compile WarpDrive 2.7.1's kernels (``compat_271.cuh``); without it, only
                when the env's source names a 2.7.1 symbol (:mod:`warp_drive.compat271.kernels`).

        Returns:
            Path of the cached cubin.
        """
        check_templates(template_header_file, template_runner_file, template_path)
        if env_source is None and env_name is not None:
            registrar = customized_env_registrar
            env_source = None if registrar is None else registrar.get_cuda_env_src_path(env_name)
            if env_source is None:
                raise ConfigError(
                    f"no CUDA source for env '{env_name}': pass env_source=path/to/step.cu, or register it with "
                    f"registrar.add_cuda_env_src_path('{env_name}', path) and pass customized_env_registrar=registrar"
                )
        dirs = env_include_dirs(env_source, include_dirs) if env_source is not None else list(include_dirs)
        source = render_source(
            self.num_envs, self.num_agents, self.blocks_per_env, env_source=env_source, constants=constants,
            max_shared_bytes=self.max_shared_bytes, compat_271=compat_271,
        )
        path = self._build(source, dirs, options, default_functions_included)
        if event_messenger is not None and hasattr(event_messenger, "set"):
            event_messenger.set()
        return path

    def load_cuda_from_source_code(
        self,
        code: str,
        default_functions_included: bool = True,
        constants: Mapping[str, Any] | None = None,
        options: Sequence[str] = DEFAULT_OPTIONS,
        *,
        compat_271: bool = False,
    ) -> Path:
        """Compile user kernels given as a string (after the prelude and the core layer).

        Kernels must have C linkage (``extern "C" __global__`` or an ``extern "C" { ... }``
        block) to be found by name. WarpDrive 2.7.1's kernels (``compat_271.cuh``) are compiled
        in when ``code`` names a 2.7.1 symbol or ``compat_271`` is True.
        """
        source = render_source(
            self.num_envs, self.num_agents, self.blocks_per_env, constants=constants, extra_code=code,
            max_shared_bytes=self.max_shared_bytes, compat_271=compat_271,
        )
        return self._build(source, [], options, default_functions_included)

    @staticmethod
    def _compile(main_file: str | os.PathLike[str], cubin_file: str | os.PathLike[str] | None = None,
                 arch: str | None = None) -> Path:
        """Compile a self-contained ``.cu`` file (2.7.1's static ``_compile``) into the kernel cache.

        ``cubin_file`` names the binary for :meth:`load_cuda_from_binary_file`
        (:func:`~warp_drive.compat271.main_files.compile_main_file`); ``arch`` defaults to the current
        device's. Returns the cached binary's path.
        """
        if arch is None:
            init_cuda()
            major, minor = torch.cuda.get_device_capability()
            arch = f"sm_{major}{minor}"
        return compile_main_file(main_file, cubin_file, arch).binary

    @property
    def compile(self) -> Callable[..., Path]:
        """2.7.1's name for :meth:`_compile`."""
        return self._compile

    def load_cuda_from_binary_file(self, cubin: str | os.PathLike[str], default_functions_included: bool = True) -> None:
        """Load a binary: one named by :meth:`_compile` (in this process, or built by it in any
        process: kernel signatures are then known), one of 2.7.1's prebuilt test binaries
        (``warp_drive/cuda_bin/test_build*.fatbin``, built on first use), or a cubin/fatbin built
        elsewhere (its kernels are launched through pycuda's untyped call, and the core services are
        not available)."""
        import pycuda.driver as cuda

        self._check_no_module()
        alias = binary_alias(cubin)
        if alias is None:
            shipped = shipped_main_file(cubin)
            if shipped is not None:  # e.g. 2.7.1's cuda_bin/test_build.fatbin: built from the shipped source
                alias = compile_main_file(shipped, cubin, self._arch)
        if alias is not None:
            path = alias.binary
            if not path.is_file():  # the cache was cleared since
                path = compile_main_file(alias.main_file, cubin, alias.arch).binary
            source: str | None = alias.source
        else:
            path = Path(os.path.expanduser(str(cubin)))
            if not path.is_file():
                raise ConfigError(
                    f"binary {str(cubin)!r} does not exist; build it first with "
                    f"fm._compile(main_file=..., cubin_file={str(cubin)!r}) in this process"
                )
            source = binary_source(path)
        self._binary = path
        self._set_module(cuda.module_from_file(str(path)), source, default_functions_included,
                         foreign=source is None, rendered=False)

    def _check_no_module(self) -> None:
        if self._module is not None:
            raise ConfigError("this function manager already holds a module; create a new manager")

    def _build(self, source: str, dirs: list, options: Sequence[str], defaults: bool) -> Path:
        import pycuda.driver as cuda

        self._check_no_module()
        path = compile_cubin(source, self._arch, include_dirs=dirs, options=options)
        self._binary = path
        self._set_module(cuda.module_from_file(str(path)), source, defaults)
        return path

    def _set_module(self, module: Any, source: str | None, defaults: bool, foreign: bool = False,
                    rendered: bool = True) -> None:
        self._module = module
        self._source = source
        self._foreign = foreign
        self._compat_271 = source is not None and kernels_271.includes_header(source)
        self._signatures = {} if foreign else _core_signatures(self._compat_271)
        self._linkage = {}
        self._barrier_kernels = set()
        if source is not None:
            self._signatures.update(parse_kernel_signatures(source))
            self._linkage = kernel_linkage(source)
            self._barrier_kernels = functions_calling(source, ENV_BARRIER) & set(self._signatures)
            if not rendered:  # a self-contained main file states its own launch constants
                self._module_envs = _module_constant(source, "wkNumberEnvs", self.num_envs)
                self._module_bpe = _module_constant(source, "wkBlocksPerEnv", self.blocks_per_env)
            for name, linked in self._linkage.items():
                if not linked:
                    logger.warning('kernel %s has no C linkage: declare it extern "C" __global__ (or put it in '
                                   'an extern "C" { ... } block) to launch it by name', name)
        if defaults:
            self.initialize_default_functions()

    def initialize_default_functions(self) -> None:
        """Load every core service kernel (nothing for a binary built elsewhere, whose kernels of
        the same names may have other signatures)."""
        if self._foreign:
            logger.warning("the loaded binary was not built by warp_drive: its core service kernels are not "
                           "initialized (the Sampler, EnvironmentReset and LogController need a module built here)")
            return
        super().initialize_default_functions()

    def has_compat_271_kernels(self) -> bool:
        """True when the loaded module was built with WarpDrive 2.7.1's kernels (``compat_271.cuh``)."""
        return self._compat_271

    def _not_built(self, name: str) -> bool:
        """True for a 2.7.1 kernel name that the loaded module (built here) was built without."""
        built_here = self._module is not None and not self._foreign
        return built_here and not self._compat_271 and name in kernels_271.COMPAT_FUNCTIONS

    def _get_function(self, name: str) -> Any:
        if name not in self._functions and self._not_built(name):
            raise KernelNotBuiltError(kernels_271.not_built_message(name))
        return super()._get_function(name)

    # ------------------------------------------------------------------ functions
    def _load_function(self, name: str) -> Any:
        if self._module is None:
            raise ConfigError(
                "no CUDA module loaded; call compile_and_load_cuda(), load_cuda_from_source_code() or "
                "load_cuda_from_binary_file() first"
            )
        import pycuda.driver as cuda

        if self._not_built(name):
            raise KernelNotBuiltError(kernels_271.not_built_message(name))
        try:
            function = self._module.get_function(name)
        except cuda.LogicError as err:
            raise DataNotFoundError(self._missing_kernel_message(name)) from err
        params = self._signatures.get(name)
        if params is None:
            if self._foreign:
                if name in DEFAULT_FUNCTIONS or name in kernels_271.COMPAT_FUNCTIONS:
                    raise ConfigError(
                        f"kernel '{name}' of a binary built elsewhere may have another signature than warp_drive's "
                        f"service kernel of that name; build the module here (fm._compile(main_file=..., "
                        f"cubin_file=...) then load_cuda_from_binary_file(cubin_file), or compile_and_load_cuda())"
                    )
                logger.info("kernel %s: signature unknown (binary built elsewhere); arguments go to pycuda's "
                            "untyped call", name)
                return _Kernel(name, function, None)
            raise DataNotFoundError(f"cannot find the signature of kernel '{name}' in the rendered source")
        try:
            codes = "".join(p.code for p in params)
        except KernelSignatureError as err:
            raise KernelSignatureError(f"kernel '{name}': {err}; use int, float, pointers or other scalars") from None
        barrier = self._check_barrier if name in self._barrier_kernels and self._module_bpe > 1 else None
        kernel = _Kernel(name, function, codes, self._dynamic_shared_bytes(name, function), params, barrier)
        if barrier is not None and self._module_bpe == self.blocks_per_env:
            kernel._check_geometry(self._grid, self._block, kernel.shared_bytes)  # fail at load
        return kernel

    def _missing_kernel_message(self, name: str) -> str:
        if self._linkage.get(name) is False:
            return (f"kernel '{name}' is defined without C linkage, so its symbol name is mangled; declare it "
                    f'extern "C" __global__ void {name}(...) or put it inside an extern "C" {{ ... }} block')
        known = sorted(n for n in self._signatures if self._linkage.get(n, True))
        return (f"kernel '{name}' is not in the loaded module; is it declared extern \"C\" __global__? "
                f"Kernels found: {', '.join(known) or 'none'}")

    def _check_barrier(self, kernel: _Kernel, grid: tuple, block: tuple, shared: int) -> None:
        threads = int(np.prod(block))
        per_sm = _occupancy_blocks_per_sm(self._binary, kernel.name, threads, shared)
        if per_sm is None:
            per_sm = self._estimate_blocks_per_sm(kernel.function, threads, shared)
        resident = None if per_sm is None else per_sm * int(self._attrs["multiprocessor_count"])
        grid_blocks = self._module_envs * self._module_bpe
        check_env_barrier_geometry(kernel.name, grid, block, self._module_bpe, self._module_envs, resident,
                                   (grid_blocks, 1))

    def _estimate_blocks_per_sm(self, function: Any, threads: int, shared: int) -> int | None:
        try:
            import pycuda.driver as cuda

            fa, da = cuda.function_attribute, cuda.device_attribute
            dev = cuda.Device(self._device_id)
            return estimate_blocks_per_sm(
                threads,
                function.get_attribute(fa.NUM_REGS),
                shared + function.get_attribute(fa.SHARED_SIZE_BYTES),
                dev.get_attribute(da.MAX_THREADS_PER_MULTIPROCESSOR),
                dev.get_attribute(da.MAX_BLOCKS_PER_MULTIPROCESSOR),
                dev.get_attribute(da.MAX_REGISTERS_PER_MULTIPROCESSOR),
                dev.get_attribute(da.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
            )
        except Exception:  # noqa: BLE001 - attributes missing on this pycuda: not checked
            logger.warning("cannot compute how many blocks fit on this device; the env barrier's grid is not checked")
            return None

    def _dynamic_shared_bytes(self, name: str, function: Any) -> int:
        """Dynamic shared memory that kernel ``name`` declares (0 when it declares none); above the
        default 48 KiB the kernel is opted in, up to the device's limit."""
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
        grid = self._grid if grid is None else tuple(grid)
        block = self._block if block is None else tuple(block)
        kernel.launch(grid, block, self.stream, args)

    def initialize_shared_constants(self, data_manager: Any, constant_names: Sequence[str]) -> None:
        """Copy host constants into ``__constant__`` symbols of the same names."""
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
        """Names of the initialized kernels (2.7.1's name for ``function_names``)."""
        return self.function_names


# 2.7.1's name for the base class (``warp_drive.managers.function_manager``)
CUDAFunctionManager = FunctionManager
