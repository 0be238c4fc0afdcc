"""EnvironmentReset: reset done envs on the device (saved copies, reset pools, fresh start states)."""

from __future__ import annotations

import secrets
from typing import Any, Sequence

import torch

from warp_drive.cuda.start_state_kernel import RESET_PARAMS, reset_kernel
from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError
from warp_drive.managers import cpu_kernels
from warp_drive.managers.function_manager import FunctionFeed, FunctionManager

RESET_THREADS = 256
MODES = ("if_done", "force_reset")


class EnvironmentReset:
    """Resets envs on the device.

    Every array pushed with ``save_copy_and_apply_at_reset`` is restored from its copy, and every
    array with a reset pool gets a row of its pool (one draw per env, shared by all of that env's
    pools, so e.g. x and y pools stay aligned). A single kernel launch handles all arrays and clears
    the done flags and timesteps of the envs it reset, and advances their reset counts (each env's
    episode index, on the data store as ``Constants.EPISODE`` when the env's kernels bind it).
    """

    def __init__(self, function_manager: FunctionManager) -> None:
        self._fm = function_manager
        function_manager.initialize_functions(["reset_when_done", "undo_done_flag_and_reset_timestep"])
        self._table_version = -1
        self._table: list[Any] = []
        self._pool_counters: torch.Tensor | None = None
        self._pool_seed = 0
        self._custom: tuple[str, FunctionFeed] | None = None
        self._start: tuple[str, tuple, FunctionFeed] | None = None
        self._fresh = False

    def init_reset_pool(self, data_manager: Any, seed: int | None = None) -> None:
        """Seed the pool draws (random when None) and build the table of reset entries."""
        self._pool_seed = (secrets.randbits(31) if seed is None else int(seed)) & 0x7FFFFFFF
        self._build_table(data_manager)
        if self._pool_counters is not None:
            self._pool_counters.zero_()

    def _build_table(self, dm: Any) -> None:
        """Saved copies, then (target, pool) pairs (the data manager checked each pair at push)."""
        E = dm.num_envs
        pools = dm.reset_target_to_pool
        entries = [(n, n + Constants.AT_RESET_SUFFIX, False) for n in dm.reset_data_list if n not in pools]
        entries += [(t, p, True) for t, p in pools.items()]
        dst = [dm.data_on_device_via_torch(target) for target, _, _ in entries]
        src = [dm.data_on_device_via_torch(source) for _, source, _ in entries]
        sizes = [t.numel() // E for t in dst]
        pool_sizes = [s.shape[0] if is_pool else 0 for s, (_, _, is_pool) in zip(src, entries)]
        if self._fm.has_kernels:
            dev = dm.device
            ptrs = lambda ts: torch.tensor([x.data_ptr() for x in ts] or [0], dtype=torch.int64, device=dev)  # noqa: E731
            ints = lambda xs: torch.tensor(list(xs) or [0], dtype=torch.int32, device=dev)  # noqa: E731
            self._table = [ptrs(dst), ptrs(src), ints(sizes), ints(pool_sizes), len(dst)]
        else:
            self._table = [dst, src, sizes, pool_sizes, len(dst)]
        if dm.is_data_on_device(Constants.EPISODE):  # the env reads its episode index: the counters live on the store
            episode = dm.data_on_device_via_torch(Constants.EPISODE)
            if self._pool_counters is not None and self._pool_counters is not episode:
                episode.copy_(self._pool_counters)
            self._pool_counters = episode
        elif self._pool_counters is None:
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
        name = "reset_when_done"
        if self._fresh and self._start is not None:
            name, specs, feed = self._start
            args += feed(specs)
        self._fm.launch(name, args, grid=(data_manager.num_envs, 1), block=(RESET_THREADS, 1, 1))

    def rows_reset(self, data_manager: Any, lo: int, hi: int, env: Any, data: Any) -> Any:
        """cpu backend: a function ``reset(done, timestep)`` that resets the done envs among
        ``lo:hi`` only, with the pool draws a whole-batch :meth:`reset_when_done` gives them
        (several blocks may reset at once, from their own threads).

        ``data``: the block's views of the env's arrays (for fresh start states); ``done``,
        ``timestep``: the block's (hi - lo,) done flags and timesteps.
        """
        if self._table_version != data_manager.version:
            self._build_table(data_manager)
        dst, src, sizes, pool_sizes, count = self._table
        dst = [d[lo:hi] for d in dst]
        src = [s if pool else s[lo:hi] for s, pool in zip(src, pool_sizes)]
        counters = self._pool_counters[lo:hi]

        def reset(done: torch.Tensor, timestep: torch.Tensor) -> None:
            cpu_kernels.reset_env_rows(lo, dst, src, sizes, pool_sizes, count, done, timestep, counters,
                                       self._pool_seed, 0, 1, start_state=self.start_state_hook(env, data))

        return reset

    # ------------------------------------------------------------------ fresh start states
    def register_start_state(self, data_manager: Any, env: Any) -> bool:
        """Use ``env``'s start-state hook (:mod:`warp_drive.vocab.start_state`) when it has one: the
        rendered ``Cuda<Name>ResetWithStartState`` kernel on the GPU, ``env.numpy_start_state`` on
        the cpu backend. Returns whether the env has a hook; it is used while
        :attr:`fresh_start_states` is True."""
        specs = tuple(getattr(env, "start_state_args", ()) or ())
        name = reset_kernel(getattr(env, "name", "") or type(env).__name__)
        if self._fm.has_kernels:
            if not specs or not self._fm.has_function(name):
                return False
            self._fm.initialize_functions([name])
            self._fm.check_arguments(name, specs, data_manager, skip=len(RESET_PARAMS))
        else:
            hook = getattr(env, "numpy_start_state", None)
            if not specs or hook is None:
                return False
            view = data_manager.host_view

            def reset_with_start_state(*args: Any) -> None:
                cpu_kernels.reset_when_done(*args[: len(RESET_PARAMS)],
                                            start_state=lambda rows, key: hook(view(), rows, key))

            self._fm.register_function(name, reset_with_start_state)
            self._fm.initialize_functions([name])
        self._start = (name, specs, FunctionFeed(data_manager))
        return True

    @property
    def fresh_start_states(self) -> bool:
        """True: every reset draws a new start state through the hook; False: resets restore the saved copies."""
        return self._fresh

    @fresh_start_states.setter
    def fresh_start_states(self, value: bool) -> None:
        if value and self._start is None:
            raise ConfigError(
                "this env has no start-state hook, so resets can only restore its saved start state; define "
                "<Name>StartState in its CUDA source, numpy_start_state and start_state_args on its class "
                "(docs/adding_an_env.md), or set fresh_start_states=False"
            )
        self._fresh = bool(value)

    def start_state_hook(self, env: Any, data: Any) -> Any:
        """The NumPy hook bound to ``data`` (a block of envs' views) while fresh starts are on,
        else None: the argument ``start_state`` of :func:`cpu_kernels.reset_env_rows`."""
        if not (self._fresh and self._start is not None):
            return None
        return lambda rows, key: env.numpy_start_state(data, rows, key)

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
