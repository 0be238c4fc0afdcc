"""Device discovery and the shared CUDA context (PyTorch and PyCUDA on the primary context).

Nothing here runs at import time. ``init_cuda()`` is called by the pycuda backend when it is first
constructed. ``python -m warp_drive.cuda.device`` prints what this machine offers each backend
(:func:`device_report`) as a table, or as JSON with ``--json``; it works without a GPU, pycuda or nvcc.
"""

from __future__ import annotations

import argparse
import atexit
import json
import logging
import platform
import re
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from warp_drive.errors import CUDACompileError, DeviceUnavailableError

logger = logging.getLogger(__name__)

_CONTEXTS: dict[int, Any] = {}

#: How to install the pycuda backend. The package is not on PyPI: install from a clone.
CUDA_INSTALL_COMMAND = 'pip install -e ".[cuda]"'
INSTALL_HINT = (
    f"from a clone of the warp_drive repository run `{CUDA_INSTALL_COMMAND}` (builds pycuda; needs an "
    "NVIDIA driver and the CUDA toolkit with nvcc on PATH), or use env_backend='cpu'"
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
    import torch

    return bool(torch.cuda.is_available()) and pycuda_available()


def backend_choice(requested: str | None) -> tuple[str, str]:
    """The requested backend, else pycuda when usable, else cpu; and a notice when cpu was chosen
    for want of a GPU ("" otherwise)."""
    if requested:
        return requested, ""
    if has_cuda_device():
        return "pycuda", ""
    return "cpu", "no usable GPU (pycuda or a CUDA device is missing): running on the cpu backend (NumPy env steps)"


def choose_backend(requested: str | None) -> str:
    """:func:`backend_choice`'s backend; its notice, if any, is logged as a warning."""
    backend, note = backend_choice(requested)
    if note:
        logger.warning("%s", note)
    return backend


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


# ----------------------------------------------------------------------------- the report
def _nvidia_driver() -> str | None:
    """The NVIDIA kernel driver version, read without pycuda: /proc, then nvidia-smi."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            match = re.search(r"Kernel Module\s+([0-9.]+)", f.read())
        if match:
            return match.group(1)
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    return out[0].strip() if out else None


def _nvcc() -> dict[str, Any]:
    from warp_drive.cuda import compiler

    try:
        path = compiler.find_nvcc()
    except CUDACompileError:
        return {"nvcc": None, "nvcc_cuda": None}
    try:
        text = compiler.nvcc_version(path)
    except OSError:
        text = ""
    match = re.search(r"release\s+([0-9.]+)", text)
    return {"nvcc": path, "nvcc_cuda": match.group(1) if match else None}


def _pycuda() -> dict[str, Any]:
    try:
        import pycuda
    except ImportError:
        return {"pycuda": None}
    out: dict[str, Any] = {"pycuda": getattr(pycuda, "VERSION_TEXT", "installed")}
    try:
        import pycuda.driver as cuda

        cuda.init()
        version = cuda.get_driver_version()  # e.g. 12040: the CUDA version the driver supports
        out["driver_cuda"] = f"{version // 1000}.{(version % 1000) // 10}"
    except Exception as err:  # noqa: BLE001 - a report: say what failed instead of raising
        out["pycuda_error"] = f"{type(err).__name__}: {err}"
    return out


def device_report(device_id: int | None = None) -> dict[str, Any]:
    """What this machine offers each backend; never raises for a missing GPU, driver, pycuda or nvcc.

    Keys: ``python``, ``platform``, ``warp_drive``, ``torch``, ``torch_cuda`` (the CUDA PyTorch
    was built with, None for a CPU build), ``cuda_available``, ``gpus`` (per visible GPU:
    ``index``, ``name``, ``compute_capability``, ``arch`` such as ``sm_90``, ``sm_count``,
    ``memory_gib``), ``nvidia_driver``, ``driver_cuda`` (needs pycuda), ``pycuda`` (its version, or
    None), ``nvcc`` (its path, or None), ``nvcc_cuda``, ``kernel_cache``, ``backend`` (what the
    training script picks without ``--backend``: ``"pycuda"`` when PyTorch sees a GPU and pycuda
    imports, as :func:`has_cuda_device`), ``problems`` (what keeps the pycuda backend from running,
    each with its fix).
    """
    import torch

    import warp_drive
    from warp_drive.cuda import compiler

    report: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "warp_drive": warp_drive.__version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
        "gpus": [],
        "nvidia_driver": _nvidia_driver(),
    }
    if report["cuda_available"]:
        indices = range(torch.cuda.device_count()) if device_id is None else [device_id]
        for i in indices:
            props = torch.cuda.get_device_properties(i)
            report["gpus"].append({
                "index": i,
                "name": props.name,
                "compute_capability": f"{props.major}.{props.minor}",
                "arch": f"sm_{props.major}{props.minor}",
                "sm_count": props.multi_processor_count,
                "memory_gib": round(props.total_memory / 2**30, 1),
            })
    report.update(_pycuda())
    report.update(_nvcc())
    report["kernel_cache"] = str(compiler.cache_dir())
    problems = []
    if report["torch_cuda"] is None:
        problems.append("PyTorch is a CPU build: install a CUDA build of torch (see pytorch.org)")
    elif not report["cuda_available"]:
        problems.append("PyTorch sees no CUDA device: check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES")
    if report["pycuda"] is None:
        problems.append(f"pycuda is not installed: {INSTALL_HINT}")
    if report["nvcc"] is None:
        problems.append("nvcc was not found (kernels are compiled at run time): install the CUDA toolkit and put nvcc on "
                        "PATH, or set $CUDA_HOME or $WARP_DRIVE_NVCC")
    report["problems"] = problems
    report["backend"] = "pycuda" if report["cuda_available"] and report["pycuda"] is not None else "cpu"
    return report


def format_report(report: dict[str, Any]) -> str:
    """``device_report()`` as a two-column text table followed by the problems, if any."""

    def show(value: Any, missing: str = "not found") -> str:
        return missing if value is None else str(value)

    rows = [
        ("warp_drive", report["warp_drive"]),
        ("Python", f"{report['python']} ({report['platform']})"),
        ("PyTorch", f"{report['torch']} (CUDA {show(report['torch_cuda'], 'none: CPU build')})"),
    ]
    if report["gpus"]:
        for gpu in report["gpus"]:
            rows.append((f"GPU {gpu['index']}", f"{gpu['name']}, {gpu['memory_gib']} GiB, {gpu['sm_count']} SMs"))
            rows.append(("  architecture", f"{gpu['arch']} (compute capability {gpu['compute_capability']})"))
    else:
        rows.append(("GPU", "none visible to PyTorch"))
    driver = show(report["nvidia_driver"])
    if report.get("driver_cuda"):
        driver += f" (supports CUDA {report['driver_cuda']})"
    rows += [
        ("NVIDIA driver", driver),
        ("pycuda", show(report["pycuda"], "not installed")),
        ("nvcc", "not found" if report["nvcc"] is None else f"{report['nvcc']} (CUDA {show(report['nvcc_cuda'], '?')})"),
        ("kernel cache", report["kernel_cache"]),
        ("default backend", report["backend"] + ("" if report["backend"] == "pycuda" else " (NumPy steps, no GPU)")),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    if report.get("pycuda_error"):
        lines.append(f"pycuda failed to talk to the driver: {report['pycuda_error']}")
    if report["problems"]:
        lines.append("")
        lines.append("To use the GPU (pycuda) backend:")
        lines += [f"  - {p}" for p in report["problems"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m warp_drive.cuda.device [--json] [--device N]``; returns the exit code (0)."""
    parser = argparse.ArgumentParser(
        prog="python -m warp_drive.cuda.device",
        description="What this machine offers warp_drive: GPU and architecture, NVIDIA driver, CUDA, pycuda, nvcc.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--device", type=int, default=None, help="report only this CUDA device index")
    args = parser.parse_args(argv)
    report = device_report(args.device)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
