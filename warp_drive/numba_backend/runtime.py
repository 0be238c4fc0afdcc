"""numba imported lazily, the CUDA simulator told apart from a GPU, and Numba kernel launches.

How a Numba kernel sees the data store: the store's arrays are torch tensors. On a GPU each tensor
is handed to the kernel as a Numba device array made from the tensor's ``__cuda_array_interface__``
(:func:`numba.cuda.as_cuda_array`, same memory, made once per tensor and cached), and the kernel is
launched on torch's current stream (a Numba external stream of the same handle), so it is ordered
with the torch work around it and joins a CUDA-graph capture that torch runs. Under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``, no GPU) the store lives in CPU memory and each tensor is
handed over as a NumPy view of the same memory; the simulator runs the kernel's Python body thread
by thread. It proves the kernel's indexing and the in-place sharing with the store, not its
compilation, speed, streams or device memory.
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import numpy as np
import torch

from warp_drive.errors import DeviceUnavailableError, KernelSignatureError

#: How to install the Numba backend.
NUMBA_INSTALL_HINT = ("pip install -e '.[numba]' (numba-cuda; on a GPU also pycuda and nvcc for the service "
                      "kernels), or use env_backend='cpu'")

#: Converted tensors kept per kernel launcher (a store has a few dozen arrays).
_CACHE_LIMIT = 512


def numba_cuda() -> Any:
    """``numba.cuda``, imported on first use.

    Raises:
        DeviceUnavailableError: numba-cuda is not installed.
    """
    try:
        from numba import cuda
    except ImportError as err:
        raise DeviceUnavailableError(f"env_backend='numba' needs numba-cuda: {NUMBA_INSTALL_HINT}") from err
    return cuda


def numba_installed() -> bool:
    """True when numba-cuda can be imported (does not touch a GPU)."""
    try:
        numba_cuda()
    except DeviceUnavailableError:
        return False
    return True


def simulated() -> bool:
    """True when Numba runs its CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    numba_cuda()
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


def store_device(device_id: int | None = None) -> torch.device:
    """Where the Numba backend's store lives: CPU memory under the simulator, else the CUDA device
    (its primary context, shared by torch, Numba and the pycuda service kernels).

    Raises:
        DeviceUnavailableError: numba-cuda is missing, or no GPU is visible and the simulator is off.
    """
    if simulated():
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceUnavailableError(
            "env_backend='numba' needs a CUDA device visible to PyTorch (or NUMBA_ENABLE_CUDASIM=1 to run Numba "
            f"kernels in its CPU simulator); {NUMBA_INSTALL_HINT}"
        )
    index = torch.cuda.current_device() if device_id is None else int(device_id)
    torch.cuda.set_device(index)
    torch.zeros(1, device=f"cuda:{index}")  # creates (retains) the primary context Numba attaches to
    cuda = numba_cuda()
    if cuda.get_current_device().id != index:
        cuda.select_device(index)
    return torch.device("cuda", index)


def is_kernel(obj: Any) -> bool:
    """True for a Numba CUDA kernel (``@cuda.jit`` without ``device=True``), GPU or simulator."""
    kind = type(obj).__name__
    if kind == "FakeCUDAKernel":  # the simulator's
        return not getattr(obj, "_device", False)
    return hasattr(obj, "py_func") and hasattr(obj, "configure") and not getattr(obj, "targetoptions", {}).get("device")


def kernel_parameters(obj: Any) -> list[str]:
    """Parameter names of a Numba kernel's Python function."""
    return list(inspect.signature(obj.py_func).parameters)


class NumbaKernel:
    """A Numba kernel whose arguments may be the data store's torch tensors.

    Launch it 2.7.1's way, ``kernel[grid, block](*args)`` (also ``[grid, block, stream, shared]``), or
    pycuda's way, ``kernel(*args, block=..., grid=...)``. Without an explicit stream it runs on
    torch's current stream. The Numba dispatcher is ``kernel.dispatcher``.
    """

    __slots__ = ("name", "dispatcher", "_simulated", "_arrays", "_streams")

    def __init__(self, name: str, dispatcher: Any, simulated_run: bool) -> None:
        self.name = name
        self.dispatcher = dispatcher
        self._simulated = simulated_run
        self._arrays: dict[tuple, Any] = {}
        self._streams: dict[int, Any] = {}

    @property
    def parameters(self) -> list[str]:
        return kernel_parameters(self.dispatcher)

    def __getitem__(self, config: Any) -> "_Configured":
        config = tuple(config) if isinstance(config, (tuple, list)) else (config,)
        if not 2 <= len(config) <= 4:
            raise KernelSignatureError(f"{self.name}[grid, block(, stream, shared)] takes 2 to 4 values, got {config!r}")
        return _Configured(self, *config)

    def __call__(self, *args: Any, block: Any = None, grid: Any = None, stream: Any = None, shared: int = 0) -> None:
        if block is None or grid is None:
            raise KernelSignatureError(f"{self.name}(*args, block=..., grid=...) needs both block and grid")
        self.launch(grid, block, args, stream=stream, shared=shared)

    def launch(self, grid: Any, block: Any, args: Sequence[Any], stream: Any = None, shared: int = 0) -> None:
        """Launch on ``args`` (tensors converted, scalars as given)."""
        values = [self._argument(a) for a in args]
        if self._simulated:
            self.dispatcher[_dims(grid), _dims(block)](*values)
            return
        if stream is None or not hasattr(stream, "handle"):  # None, or a pycuda stream: torch's current stream
            stream = self._torch_stream()
        self.dispatcher[_dims(grid), _dims(block), stream, int(shared)](*values)

    def _argument(self, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        key = (value.data_ptr(), tuple(value.shape), value.stride(), value.dtype, value.device)
        array = self._arrays.get(key)
        if array is None:
            array = self._convert(value)
            if len(self._arrays) >= _CACHE_LIMIT:
                self._arrays.pop(next(iter(self._arrays)))
            self._arrays[key] = array
        return array

    def _convert(self, tensor: torch.Tensor) -> Any:
        where = f"kernel {self.name}"
        if self._simulated:
            if tensor.device.type != "cpu":
                raise KernelSignatureError(f"{where}: the CUDA simulator takes CPU tensors, got one on {tensor.device}")
            return tensor.numpy()
        if not tensor.is_cuda:
            raise KernelSignatureError(f"{where} got a tensor on {tensor.device}; pass the store's device tensor "
                                       f"(dm.device_data(name)) or tensor.cuda()")
        # no stream sync: the launch goes on torch's current stream, after the work that wrote the tensor
        return numba_cuda().as_cuda_array(tensor.detach(), sync=False)

    def _torch_stream(self) -> Any:
        handle = int(torch.cuda.current_stream().cuda_stream)
        stream = self._streams.get(handle)
        if stream is None:
            cuda = numba_cuda()
            stream = cuda.external_stream(handle) if handle else cuda.default_stream()
            self._streams[handle] = stream
        return stream

    def __repr__(self) -> str:
        return f"NumbaKernel({self.name!r})"


class _Configured:
    """``kernel[grid, block, ...]``: call it with the kernel's arguments."""

    __slots__ = ("_kernel", "_grid", "_block", "_stream", "_shared")

    def __init__(self, kernel: NumbaKernel, grid: Any, block: Any, stream: Any = None, shared: int = 0) -> None:
        self._kernel, self._grid, self._block, self._stream, self._shared = kernel, grid, block, stream, shared

    def __call__(self, *args: Any) -> None:
        stream = None if isinstance(self._stream, int) and self._stream == 0 else self._stream
        self._kernel.launch(self._grid, self._block, args, stream=stream, shared=self._shared)


def _dims(value: Any) -> Any:
    """A launch dimension as Numba takes it: an int or a tuple of ints (pycuda's (x, 1, 1) works too)."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    return tuple(int(v) for v in value)
