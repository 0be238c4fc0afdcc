"""EnvironmentReset: restore done envs from their saved copies or reset pools, in one launch."""

from __future__ import annotations

import logging
import secrets
from typing import Any, Sequence

import torch

from warp_drive.errors import ConfigError, DataShapeError, DataTypeError
from warp_drive.managers.function_manager import FunctionFeed, FunctionManager
from warp_drive.utils.constants import Constants

logger = logging.getLogger(__name__)

RESET_THREADS = 256
MODES = ("if_done", "force_reset")


class EnvironmentReset:
    """Resets envs on the device.

    Every array pushed with ``save_copy_and_apply_at_reset`` is restored from its copy, and every
    array with a reset pool gets a row of its pool (one draw per env, shared by all of that env's
    pools, so e.g. x and y pools stay aligned). A single kernel launch handles all arrays and clears
    the done flags and timesteps of the envs it reset.
    """

    def __init__(self, function_manager: FunctionManager) -> None:
        self._fm = function_manager
        function_manager.initialize_functions(["reset_when_done", "undo_done_flag_and_reset_timestep"])
        self._table_version = -1
        self._table: list[Any] = []
        self._pool_counters: torch.Tensor | None = None
        self._pool_seed = 0
        self._custom: tuple[str, FunctionFeed] | None = None

    def init_reset_pool(self, data_manager: Any, seed: int | None = None) -> None:
        """Seed the pool draws (random when None) and validate every (target, pool) pair."""
        self._pool_seed = (secrets.randbits(31) if seed is None else int(seed)) & 0x7FFFFFFF
        self._build_table(data_manager)
        if self._pool_counters is not None:
            self._pool_counters.zero_()

    def _build_table(self, dm: Any) -> None:
        E = dm.num_envs
        pools = dm.reset_target_to_pool
        dst, src, sizes, pool_sizes = [], [], [], []
        for name in dm.reset_data_list:
            if name in pools:
                continue
            t = dm.data_on_device_via_torch(name)
            dst.append(t)
            src.append(dm.data_on_device_via_torch(name + Constants.AT_RESET_SUFFIX))
            sizes.append(t.numel() // E)
            pool_sizes.append(0)
        for target, pool_name in pools.items():
            t = dm.data_on_device_via_torch(target)
            pool = dm.data_on_device_via_torch(pool_name)
            if t.dim() == 0 or t.shape[0] != E:
                raise DataShapeError(f"reset target '{target}' has shape {tuple(t.shape)}; it needs a leading env axis of {E}")
            if tuple(pool.shape[1:]) != tuple(t.shape[1:]):
                raise DataShapeError(
                    f"reset pool '{pool_name}' has rows of shape {tuple(pool.shape[1:])}, but '{target}' has "
                    f"{tuple(t.shape[1:])} per env"
                )
            if pool.dtype != t.dtype:
                raise DataTypeError(f"reset pool '{pool_name}' is {pool.dtype} but '{target}' is {t.dtype}")
            dst.append(t)
            src.append(pool)
            sizes.append(t.numel() // E)
            pool_sizes.append(pool.shape[0])
        if self._fm.has_kernels:
            dev = dm.device
            ptrs = lambda ts: torch.tensor([x.data_ptr() for x in ts] or [0], dtype=torch.int64, device=dev)  # noqa: E731
            ints = lambda xs: torch.tensor(list(xs) or [0], dtype=torch.int32, device=dev)  # noqa: E731
            self._table = [ptrs(dst), ptrs(src), ints(sizes), ints(pool_sizes), len(dst)]
        else:
            self._table = [dst, src, sizes, pool_sizes, len(dst)]
        if self._pool_counters is None:
            self._pool_counters = torch.zeros(E, dtype=torch.int32, device=dm.device)
        self._table_version = dm.version

    def reset_when_done(self, data_manager: Any, mode: str = "if_done", undo_done_after_reset: bool = True) -> None:
        """Reset the done envs (``mode="if_done"``) or all envs (``mode="force_reset"``)."""
        if mode not in MODES:
            raise ConfigError(f"reset mode {mode!r} is unknown; use one of {MODES}")
        if self._table_version != data_manager.version:
            self._build_table(data_manager)
        args = [
            *self._table,
            data_manager.data_on_device_via_torch(Constants.DONE),
            data_manager.data_on_device_via_torch(Constants.TIMESTEP),
            self._pool_counters,
            self._pool_seed,
            int(mode == "force_reset"),
            int(bool(undo_done_after_reset)),
        ]
        self._fm.launch("reset_when_done", args, grid=(data_manager.num_envs, 1), block=(RESET_THREADS, 1, 1))

    # ------------------------------------------------------------------ custom reset kernels
    def register_custom_reset_function(self, data_manager: Any, reset_function_name: str | None = None) -> bool:
        """Use an env-provided reset kernel when the compiled module defines it. Returns whether it does."""
        if not reset_function_name or not self._fm.has_kernels or not self._fm.has_function(reset_function_name):
            return False
        self._fm.initialize_functions([reset_function_name])
        self._custom = (reset_function_name, FunctionFeed(data_manager))
        return True

    def custom_reset(self, args: Sequence[Any] | None = None, block: Any = None, grid: Any = None) -> None:
        """Launch the registered custom reset kernel with arguments bound by name."""
        if self._custom is None:
            raise ConfigError("no custom reset kernel is registered (define Cuda<EnvName>Reset in the env source)")
        name, feed = self._custom
        self._fm.launch(name, feed(list(args or [])), grid=grid, block=block)

    def state_dict(self) -> dict:
        """Pool seed and per-env pool draw counters (for checkpoints)."""
        counters = None if self._pool_counters is None else self._pool_counters.detach().cpu().clone()
        return {"pool_seed": self._pool_seed, "pool_counters": counters}

    def load_state_dict(self, state: dict) -> None:
        self._pool_seed = int(state["pool_seed"])
        if state["pool_counters"] is not None and self._pool_counters is not None:
            self._pool_counters.copy_(state["pool_counters"])


PyCUDAEnvironmentReset = EnvironmentReset
CUDAEnvironmentReset = EnvironmentReset
