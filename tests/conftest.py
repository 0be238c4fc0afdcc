"""Test configuration: the `gpu` marker skips cleanly where no CUDA device/pycuda is present."""

from __future__ import annotations

import os
import tempfile

import pytest

# Several GPUs (tools/gpu_suite.sh runs pytest-xdist with one worker per GPU): each worker sees one
# GPU, chosen before anything creates a CUDA context (among $CUDA_VISIBLE_DEVICES where it is set);
# subprocesses of its tests inherit it.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("WARP_DRIVE_TEST_GPUS"):
    _worker = int(os.environ["PYTEST_XDIST_WORKER"].lstrip("gw"))
    _gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    _gpus = _gpus or [str(i) for i in range(int(os.environ["WARP_DRIVE_TEST_GPUS"]))]
    os.environ["CUDA_VISIBLE_DEVICES"] = _gpus[_worker % len(_gpus)]

# Kernels compiled by tests go to a throwaway cache unless the caller chose one.
os.environ.setdefault("WARP_DRIVE_CACHE_DIR", os.path.join(tempfile.gettempdir(), "warp_drive_test_cache"))


try:  # tiny models on a loaded 2-core CI machine run far faster on one thread
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


def _gpu_skip_reason() -> str | None:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device visible to PyTorch"
    try:
        import pycuda.driver  # noqa: F401
    except ImportError:
        return "pycuda is not installed (from a clone: pip install -e '.[cuda]')"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [i for i in items if "gpu" in i.keywords]
    reason = _gpu_skip_reason() if gpu_items else None
    for item in items:
        if reason and "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
        if "slow" in item.keywords and not config.getoption("--run-slow"):
            item.add_marker(pytest.mark.skip(reason="slow test; pass --run-slow"))
