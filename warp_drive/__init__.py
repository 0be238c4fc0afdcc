"""warp_drive: end-to-end multi-agent reinforcement learning on one GPU.

Importing this package has no side effects: it creates no CUDA context, compiles nothing and
writes no files. pycuda is imported only when the pycuda backend is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "EnvWrapper": "warp_drive.env.env_wrapper",
    "DataFeed": "warp_drive.vocab.data_feed",
    "Constants": "warp_drive.vocab.constants",
    "CUDAEnvironmentContext": "warp_drive.env.context",
    "EnvironmentRegistrar": "warp_drive.vocab.registrar",
    "DataManager": "warp_drive.managers.data_manager",
    "CPUDataManager": "warp_drive.managers.data_manager",
    "FunctionManager": "warp_drive.managers.function_manager",
    "CPUFunctionManager": "warp_drive.managers.function_manager",
    "FunctionFeed": "warp_drive.managers.function_manager",
    "PyCUDADataManager": "warp_drive.managers.pycuda_data_manager",
    "PyCUDAFunctionManager": "warp_drive.managers.pycuda_function_manager",
    "Sampler": "warp_drive.services.sampler",
    "EnvironmentReset": "warp_drive.services.environment_reset",
    "LogController": "warp_drive.services.log_controller",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warp_drive' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
