"""Device discovery and the shared CUDA context (PyTorch and PyCUDA on the primary context).

Nothing here runs at import time. ``init_cuda()`` is called by the pycuda backend when it is
first constructed. Run ``python -m warp_drive.utils.device`` to print what this machine has.
"""

from __future__ import annotations

import atexit
import logging
import platform
from typing import Any

from warp_drive.errors import DeviceUnavailableError

logger = logging.getLogger(__name__)

_CONTEXTS: dict[int, Any] = {}

INSTALL_HINT = (
    "install the CUDA extra with `pip install 'warpdrive-marl[cuda]'` (needs an NVIDIA driver and "
    "the CUDA toolkit with nvcc on PATH), or use env_backend='cpu'"
)


def pycuda_available() -> bool:
    """True when the pycuda package can be imported (does not touch the GPU)."""
    try:
        import pycuda  # noqa: F401
    except ImportError:
        return False
    return True


def has_cuda_device() -> bool:
    """True when PyTorch sees a CUDA device and pycuda is installed."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return bool(torch.cuda.is_available()) and pycuda_available()


def init_cuda(device_id: int | None = None) -> Any:
    """Make the device's primary context current for PyCUDA, the one PyTorch uses.

    Idempotent per device. Returns the pycuda context.

    Raises:
        DeviceUnavailableError: pycuda is missing or no CUDA device is visible.
    """
    try:
        import pycuda.driver as cuda
    except ImportError as err:
        raise DeviceUnavailableError(f"the pycuda backend needs pycuda: {INSTALL_HINT}") from err
    import torch

    if not torch.cuda.is_available():
        raise DeviceUnavailableError(f"no CUDA device is visible to PyTorch; {INSTALL_HINT}")
    if device_id is None:
        device_id = torch.cuda.current_device()
    if device_id in _CONTEXTS:
        return _CONTEXTS[device_id]
    torch.cuda.set_device(device_id)
    torch.zeros(1, device=f"cuda:{device_id}")  # creates (retains) the primary context
    cuda.init()
    ctx = cuda.Device(device_id).retain_primary_context()
    ctx.push()
    _CONTEXTS[device_id] = ctx
    atexit.register(_release, device_id)
    logger.info("pycuda attached to the primary context of cuda:%d", device_id)
    return ctx


def _release(device_id: int) -> None:
    ctx = _CONTEXTS.pop(device_id, None)
    if ctx is None:
        return
    try:
        import pycuda.tools

        ctx.pop()
        pycuda.tools.clear_context_caches()
    except Exception:  # pragma: no cover - interpreter shutdown
        pass


def device_info(device_id: int | None = None) -> dict[str, Any]:
    """Name, compute capability, SM count, driver and toolkit versions of a device."""
    import torch

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__}
    if not torch.cuda.is_available():
        info["cuda_device"] = None
        return info
    dev = torch.cuda.current_device() if device_id is None else device_id
    props = torch.cuda.get_device_properties(dev)
    info.update(
        cuda_device=props.name,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        total_memory_gib=round(props.total_memory / 2**30, 1),
        torch_cuda=torch.version.cuda,
    )
    if pycuda_available():
        import pycuda.driver as cuda

        cuda.init()
        info["driver_version"] = cuda.get_driver_version()
        info["pycuda"] = __import__("pycuda").VERSION_TEXT
    return info


def device_attributes(device_id: int) -> dict[str, int]:
    """Launch limits of a device, read from the driver."""
    import torch

    props = torch.cuda.get_device_properties(device_id)
    out = {
        "max_threads_per_block": 1024,
        "multiprocessor_count": props.multi_processor_count,
        "major": props.major,
        "minor": props.minor,
    }
    try:
        import pycuda.driver as cuda

        dev = cuda.Device(device_id)
        out["max_threads_per_block"] = dev.get_attribute(cuda.device_attribute.MAX_THREADS_PER_BLOCK)
        out["max_grid_dim_x"] = dev.get_attribute(cuda.device_attribute.MAX_GRID_DIM_X)
        out["max_shared_memory_per_block"] = dev.get_attribute(cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK)
        out["max_shared_memory_per_block_optin"] = dev.get_attribute(
            cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        )
    except Exception:  # pragma: no cover
        pass
    return out


def main() -> None:  # pragma: no cover - CLI
    import json

    print(json.dumps(device_info(), indent=2, default=str))


if __name__ == "__main__":  # pragma: no cover
    main()
