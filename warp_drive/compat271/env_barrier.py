"""Launch geometry of kernels that call WarpDrive 2.7.1's env barrier ``__sync_env_threads``
(``compat_271.cuh``): the blocks of one env wait for each other, so the whole grid must be
resident on the device at once.

:func:`check_env_barrier_geometry` refuses a grid a launch could deadlock on; how many blocks fit
on one SM comes from the driver's occupancy query (``_occupancy_blocks_per_sm``) or, where that
is unavailable, from the kernel's resources (:func:`estimate_blocks_per_sm`).
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any, Sequence

import numpy as np

from warp_drive.cuda.compiler import DEFAULT_MAX_SHARED_BYTES
from warp_drive.errors import GeometryError


#: The 2.7.1 barrier across the blocks of one env (``compat_271.cuh``).
ENV_BARRIER = "__sync_env_threads"


def estimate_blocks_per_sm(
    threads: int,
    registers_per_thread: int,
    shared_bytes: int,
    max_threads_per_sm: int,
    max_blocks_per_sm: int,
    registers_per_sm: int,
    shared_bytes_per_sm: int,
    reserved_shared_per_block: int = 1024,
    warp_size: int = 32,
) -> int:
    """Blocks of one kernel that fit on one SM at once, from its resources (a conservative
    stand-in for ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` when that is unavailable):
    registers are allocated per warp in units of 256, shared memory per block plus the
    driver's reserve."""
    warps = -(-int(threads) // warp_size)
    limits = [int(max_blocks_per_sm), int(max_threads_per_sm) // (warps * warp_size)]
    if registers_per_thread > 0:
        per_warp = -(-int(registers_per_thread) * warp_size // 256) * 256
        limits.append(int(registers_per_sm) // (per_warp * warps))
    smem = int(shared_bytes) + int(reserved_shared_per_block)
    if shared_bytes > 0 or reserved_shared_per_block > 0:
        limits.append(int(shared_bytes_per_sm) // smem)
    return max(0, min(limits))


def check_env_barrier_geometry(
    kernel: str,
    grid: Sequence[int],
    block: Sequence[int],
    blocks_per_env: int,
    num_envs: int,
    resident_blocks: int | None,
    suggested_grid: Sequence[int],
) -> None:
    """Refuse a launch of a kernel that calls ``__sync_env_threads`` on a grid where its blocks
    could wait forever: a grid that is not 1-D, one that cuts an env's blocks apart, or one with
    more blocks than the device holds at once (``resident_blocks``; None: unknown, not checked).

    Raises:
        GeometryError: naming the limit and the fix.
    """
    if blocks_per_env <= 1:
        return
    dims = [*grid, 1, 1][:3]
    if dims[1] != 1 or dims[2] != 1:
        raise GeometryError(
            f"kernel '{kernel}' calls {ENV_BARRIER}(), which groups the blocks of an env by blockIdx.x; "
            f"launch it on a 1-D grid such as grid={tuple(suggested_grid)}, not grid={tuple(grid)}"
        )
    blocks = dims[0]
    if blocks % blocks_per_env and blocks < num_envs * blocks_per_env:
        raise GeometryError(
            f"kernel '{kernel}' calls {ENV_BARRIER}() and each env spans blocks_per_env={blocks_per_env} "
            f"blocks, but grid={tuple(grid)} launches only part of an env's blocks (the others would wait "
            f"forever); use a multiple of {blocks_per_env} blocks, e.g. grid={tuple(suggested_grid)}"
        )
    if resident_blocks is not None and blocks > resident_blocks:
        threads = int(np.prod(block))
        max_envs = resident_blocks // blocks_per_env
        raise GeometryError(
            f"kernel '{kernel}' calls {ENV_BARRIER}() with blocks_per_env={blocks_per_env}: the blocks of an "
            f"env wait for each other, so all {blocks} blocks of grid={tuple(grid)} must be resident on the "
            f"GPU at once, but this device holds at most {resident_blocks} blocks of {threads} threads of "
            f"this kernel (2.7.1 hung here). Use num_envs <= {max_envs}, or fewer registers / less shared "
            f"memory per block, or split the step at the barrier into kernels launched one after the "
            f"other (a kernel boundary is a barrier: the env's phase_kernels)"
        )


_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


@functools.lru_cache(maxsize=1)
def _libcuda() -> Any:
    return ctypes.CDLL("libcuda.so.1")  # loaded once (a failed load is retried next time)


def _occupancy_blocks_per_sm(binary: str | os.PathLike[str] | None, kernel: str, threads: int,
                             shared_bytes: int) -> int | None:
    """Blocks of ``kernel`` (from the cubin ``binary``) that one SM runs at once, from the driver's
    ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (None when the driver library or the binary is unavailable);
    pycuda does not expose the function handle, so the binary is loaded a second time through the driver API."""
    if binary is None:
        return None
    try:
        lib = _libcuda()
        module, function, count = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(0)
        if lib.cuModuleLoad(ctypes.byref(module), str(binary).encode()) != 0:
            return None
    except (OSError, AttributeError):
        return None
    try:
        if lib.cuModuleGetFunction(ctypes.byref(function), module, kernel.encode()) != 0:
            return None
        if shared_bytes > DEFAULT_MAX_SHARED_BYTES:
            lib.cuFuncSetAttribute(function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ctypes.c_int(shared_bytes))
        status = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(count), function, ctypes.c_int(threads), ctypes.c_size_t(shared_bytes))
        return int(count.value) if status == 0 else None
    finally:
        lib.cuModuleUnload(module)
