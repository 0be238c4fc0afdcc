"""NumPy twins of the core CUDA kernels (``warp_drive/cuda/core/*.cuh``) for the CPU backend.

The twin of ``core_service.cuh``: it gathers the twins of :mod:`warp_drive.managers.cpu_core` (one
module per header) and those of WarpDrive 2.7.1's kernels (:mod:`warp_drive.compat271.cpu_kernels`)
into :data:`CORE_KERNELS`, the table the CPU function manager launches from, and is the import
path of this package's own twins.

Every function has the name and argument order of its CUDA kernel. Pointer arguments are
C-contiguous NumPy arrays (or CPU torch tensors), treated as flat word arrays and written in place;
``reset_when_done`` takes Python lists of arrays instead of device pointer tables. Results are
bit-identical to the CUDA kernels but for the float32 rounding of Gaussian samples
(:mod:`~warp_drive.managers.cpu_core.sampler`).
"""

from __future__ import annotations

from collections.abc import Callable

from warp_drive.compat271.cpu_kernels import KERNELS as COMPAT_271_KERNELS
from warp_drive.managers.cpu_core import log, reset, sampler
from warp_drive.managers.cpu_core.log import log_one_step, reset_log_mask, update_log_mask
from warp_drive.managers.cpu_core.reset import (
    POOL_STREAM,
    StartStateHook,
    reset_env_rows,
    reset_when_done,
    undo_done_flag_and_reset_timestep,
)
from warp_drive.managers.cpu_core.sampler import (
    ERROR_BAD_INDEX,
    ERROR_BAD_SUM,
    ERROR_BAD_VALUE,
    MAX_SAMPLE_HEADS,
    PROB_SUM_TOLERANCE,
    sample_action_heads,
    sample_action_rows,
    sample_actions,
    sample_gaussian_action_rows,
    sample_gaussian_actions,
)

__all__ = ["CORE_KERNELS", *log.__all__, *reset.__all__, *sampler.__all__]

#: Kernel name -> NumPy twin, for the CPU function manager.
CORE_KERNELS: dict[str, Callable[..., None]] = {
    "sample_actions": sample_actions,
    "sample_action_heads": sample_action_heads,
    "sample_gaussian_actions": sample_gaussian_actions,
    "reset_when_done": reset_when_done,
    "undo_done_flag_and_reset_timestep": undo_done_flag_and_reset_timestep,
    "log_one_step": log_one_step,
    "reset_log_mask": reset_log_mask,
    "update_log_mask": update_log_mask,
    **COMPAT_271_KERNELS,
}
