"""A loaded PyCUDA kernel, ``_Kernel``, and the conversion of its launch arguments.

pycuda is imported lazily, as in :mod:`warp_drive.managers.pycuda_function_manager`.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np
import torch

from warp_drive.cuda.signature import KernelParam
from warp_drive.errors import ConfigError, GeometryError, KernelSignatureError


class _DevicePointer:
    """A raw device address in the form pycuda's untyped call accepts (an object with ``gpudata``)."""

    __slots__ = ("gpudata",)

    def __init__(self, address: int) -> None:
        self.gpudata = address


_TORCH_FOR_KIND = {"float": (torch.float32,), "int": (torch.int32,), "uint": (torch.int32, getattr(torch, "uint32", torch.int32))}
_INT_CODES = frozenset("iIbBhHqQ?")


def _raw_address(value: Any) -> int | None:
    """Device address of a non-tensor pointer argument, or None when ``value`` is not one."""
    if value is None:
        return 0
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)  # an address, e.g. tensor.data_ptr()
    gpudata = getattr(value, "gpudata", None)  # pycuda GPUArray, CudaTensorHolder
    if gpudata is not None:
        return int(gpudata)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return int(interface["data"][0])
    try:  # pycuda DeviceAllocation
        return int(value)
    except (TypeError, ValueError):
        return None


def _pointer_converter(kernel: str, i: int, param: KernelParam) -> Callable[[Any], int]:
    dtypes = _TORCH_FOR_KIND.get(param.base_kind)
    dtype = dtypes[0] if dtypes else None
    where = f"{kernel}: parameter {i} '{param.ctype}* {param.name}'"
    tensor_type = torch.Tensor

    def check(value: torch.Tensor) -> int:
        if dtypes is not None and value.dtype not in dtypes:
            raise KernelSignatureError(f"{where} expects {param.ctype} data, got a {value.dtype} tensor")
        if not value.is_cuda:
            raise KernelSignatureError(f"{where} got a tensor on {value.device}; pass the device tensor "
                                       f"(dm.device_data(name)) or tensor.cuda()")
        if not value.is_contiguous():
            raise KernelSignatureError(f"{where} got a non-contiguous tensor of shape {tuple(value.shape)}; "
                                       f"kernels index memory as C order: pass tensor.contiguous()")
        return value.data_ptr()

    def convert(value: Any) -> int:
        if type(value) is tensor_type or isinstance(value, tensor_type):
            if value.dtype is dtype and value.is_cuda and value.is_contiguous():  # the common case, fast
                return value.data_ptr()
            return check(value)
        address = _raw_address(value)
        if address is None:
            raise KernelSignatureError(f"{where} expects an array (a torch tensor or a device pointer), got "
                                       f"{type(value).__name__} {value!r}")
        return address

    return convert


_INT_TYPES = frozenset({int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64})
_FLOAT_TYPES = frozenset({float, np.float16, np.float32, np.float64}) | _INT_TYPES


def _scalar_converter(kernel: str, i: int, param: KernelParam) -> Callable[[Any], Any]:
    where = f"{kernel}: parameter {i} '{param.ctype} {param.name}'"
    integral = param.code in _INT_CODES
    fast = _INT_TYPES if integral else _FLOAT_TYPES

    def convert(value: Any) -> Any:
        if type(value) in fast:
            return value
        if isinstance(value, torch.Tensor):
            raise KernelSignatureError(f"{where} expects a scalar, got a tensor of shape {tuple(value.shape)}; "
                                       f"pass a number (tensor.item()) or declare the parameter as a pointer")
        if isinstance(value, (bool, np.bool_)):
            return int(value)
        if isinstance(value, (int, np.integer)):
            return value
        if isinstance(value, (float, np.floating)):
            if integral:
                raise KernelSignatureError(f"{where} expects an integer, got {type(value).__name__} {value!r}; "
                                           f"pass int(value) or np.int32(value)")
            return value
        raise KernelSignatureError(f"{where} expects a number, got {type(value).__name__} {value!r}")

    return convert


def _untyped_value(value: Any) -> Any:
    """One argument of a kernel whose signature is unknown, in a form pycuda's own call packs:
    tensors become device pointers, Python ints int32 (an int beyond int32 is taken as an address),
    Python floats float32, bools int32; anything else (NumPy scalars, pycuda objects) as given."""
    if isinstance(value, torch.Tensor):
        return _DevicePointer(value.data_ptr())
    if value is None:
        return _DevicePointer(0)
    if isinstance(value, bool):
        return np.int32(value)
    if isinstance(value, int):
        return np.int32(value) if -(2**31) <= value < 2**31 else np.uintp(value)
    if isinstance(value, float):
        return np.float32(value)
    return value


_DIMS: dict[Any, tuple[int, ...]] = {}  # launch dimensions seen before -> their int tuple


def _dims(value: Any, what: str, kernel: str) -> tuple[int, ...]:
    """``block`` / ``grid`` as a tuple of 1 to 3 positive ints (memoised: launches repeat them)."""
    try:
        return _DIMS[value]
    except (KeyError, TypeError):
        pass
    try:
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{kernel}: {what} must be a tuple of ints such as {what}=fm.{what}, got {value!r}") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise GeometryError(f"{kernel}: {what}={value!r} must have 1 to 3 positive dimensions")
    if isinstance(value, tuple) and len(_DIMS) < 4096:
        _DIMS[value] = dims
    return dims


class _Kernel:
    """A loaded kernel, callable the way pycuda's ``Function`` is.

    ``kernel(*args, block=(x, 1, 1), grid=(g, 1), stream=None, shared=0)`` launches it; arguments are torch
    tensors (their device pointers), the values ``dm.device_data(name)`` returns, NumPy scalars, Python numbers
    or pycuda device pointers, converted by the kernel's parsed signature. A kernel of a binary built elsewhere
    has no known signature: its arguments then go to pycuda's own untyped call.

    :meth:`launch` is the internal fast path (``FunctionManager.launch``, the services): it packs
    the arguments with the prepared format and calls pycuda's stateless launch directly, skipping
    ``prepared_async_call``'s per-call argument handling (the sampler's launch is host-bound); it
    falls back to ``prepared_async_call`` on a pycuda without that entry point.
    """

    __slots__ = ("name", "function", "codes", "params", "shared_bytes", "barrier_check", "_checked",
                 "_launch", "_pack", "_format", "_convert")

    def __init__(
        self,
        name: str,
        function: Any,
        codes: str | None,
        shared_bytes: int = 0,
        params: Sequence[KernelParam] | None = None,
        barrier_check: Callable[["_Kernel", tuple, tuple, int], None] | None = None,
    ) -> None:
        self.name = name
        self.function = function
        self.codes = codes
        self.params = None if params is None else list(params)
        self.shared_bytes = shared_bytes
        self.barrier_check = barrier_check
        self._checked: set = set()
        self._launch = None
        self._format = None
        self._pack = None
        self._convert: list[Callable[[Any], Any]] = []
        if codes is None:  # unknown signature: pycuda's untyped call
            return
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
        if self.params is not None:
            self._convert = [
                _pointer_converter(name, i, p) if p.is_pointer else _scalar_converter(name, i, p)
                for i, p in enumerate(self.params)
            ]

    @property
    def is_typed(self) -> bool:
        """True when the kernel's signature is known (arguments are converted and checked)."""
        return self.codes is not None

    def _check_geometry(self, grid: tuple, block: tuple, shared: int) -> None:
        key = (grid, block, shared)
        if key not in self._checked:
            self.barrier_check(self, grid, block, shared)  # type: ignore[misc]
            self._checked.add(key)

    def launch(self, grid: tuple, block: tuple, stream: Any, args: Sequence[Any], shared: int | None = None) -> None:
        """Internal fast path: ``args`` are tensors and Python/NumPy scalars in signature order;
        ``shared`` defaults to the kernel's declared dynamic shared memory."""
        shared = self.shared_bytes if shared is None else shared
        if self.barrier_check is not None:
            self._check_geometry(grid, block, shared)
        if self.codes is None:
            self.function(*[_untyped_value(a) for a in args], grid=grid, block=block, stream=stream, shared=shared)
            return
        values = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        if self._launch is None:
            self.function.prepared_async_call(grid, block, stream, *values, shared_size=shared)
            return
        try:
            buffer = self._pack(self._format, *values)
        except Exception as err:  # noqa: BLE001 - struct errors: values out of the parameter's range
            raise KernelSignatureError(f"{self.name}: cannot pass the arguments {list(args)!r}: {err}") from None
        self._launch(grid, block, buffer, shared, stream)

    def __call__(
        self,
        *args: Any,
        block: Any = None,
        grid: Any = (1, 1),
        stream: Any = None,
        shared: int = 0,
        time_kernel: bool = False,
    ) -> float | None:
        """Launch like a pycuda function: ``f(*args, block=fm.block, grid=fm.grid)``.

        Args:
            block: threads per block, e.g. ``fm.block`` (required, as in pycuda).
            grid: blocks, e.g. ``fm.grid`` (default one block).
            stream: a pycuda ``Stream`` (default: the legacy default stream).
            shared: dynamic shared memory in bytes (default: what the kernel declares in
                ``<name>_dynamic_shared_bytes``, else 0).
            time_kernel: synchronise around the launch and return its wall time in seconds.

        Raises:
            KernelSignatureError: wrong number or kinds of arguments for the kernel's signature.
            GeometryError: an env-barrier kernel on a grid it could deadlock on.
        """
        if block is None:
            raise ConfigError(f"{self.name}: pass block=(threads, 1, 1), e.g. block=fm.block")
        block = _dims(block, "block", self.name)
        grid = _dims(grid, "grid", self.name)
        shared = int(shared) if shared else self.shared_bytes
        if time_kernel:
            import pycuda.driver as cuda

            cuda.Context.synchronize()
            start = time.perf_counter()
            self(*args, block=block, grid=grid, stream=stream, shared=shared)
            cuda.Context.synchronize()
            return time.perf_counter() - start
        params = self.params
        if params is not None:
            if len(args) != len(params):
                names = ", ".join(f"{p.ctype}{'*' if p.is_pointer else ''} {p.name}" for p in params)
                raise KernelSignatureError(f"{self.name}({names}) takes {len(params)} arguments, got {len(args)}")
            args = tuple(convert(a) for convert, a in zip(self._convert, args))
        self.launch(grid, block, stream, args, shared)
        return None

    def __repr__(self) -> str:
        kind = "typed" if self.codes is not None else "untyped"
        return f"<kernel {self.name} ({kind})>"
