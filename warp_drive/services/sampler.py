"""Sampler: in-kernel action sampling (categorical and Gaussian) on either backend.

Random numbers are Philox4x32-10, counter based (``docs/architecture.md``): each action head keeps
one uint32 call counter per (env, agent) row, so there is no per-thread generator state to
allocate, and the CPU backend draws bit-identical categorical actions.
"""

from __future__ import annotations

import functools
import logging
import secrets
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from warp_drive.errors import DataNotFoundError, DataShapeError, DataTypeError, SamplerError
from warp_drive.managers import cpu_kernels
from warp_drive.managers.cpu_kernels import ERROR_BAD_INDEX, ERROR_BAD_SUM, ERROR_BAD_VALUE, MAX_SAMPLE_HEADS
from warp_drive.managers.function_manager import FunctionManager

logger = logging.getLogger(__name__)

THREADS_PER_BLOCK = 256


@functools.lru_cache(maxsize=1024)
def stream_id(action_name: str, head: int) -> int:
    """Philox stream of one action head (stable across runs and processes)."""
    return zlib.crc32(f"{action_name}/{head}".encode()) & 0x7FFFFFFF


class Sampler:
    """Samples actions into an action placeholder of shape (num_envs, num_agents, num_heads), or
    (num_envs, num_agents) for a single head.

    Args:
        function_manager: the backend's function manager (core functions are initialized here).
    """

    def __init__(self, function_manager: FunctionManager) -> None:
        self._fm = function_manager
        function_manager.initialize_functions(["sample_actions", "sample_gaussian_actions"])
        try:  # a module built by an older warp_drive lacks it: heads are then sampled one at a time
            function_manager.initialize_functions(["sample_action_heads"])
            self._has_heads_kernel = True
        except DataNotFoundError:
            logger.info("the loaded module has no sample_action_heads kernel; each head takes its own launch")
            self._has_heads_kernel = False
        self._seed: int | None = None
        self._counters: dict[tuple[str, int], torch.Tensor] = {}
        self._registered: dict[str, tuple[int, bool]] = {}
        self._error_flag: torch.Tensor | None = None

    @property
    def seed(self) -> int | None:
        return self._seed

    @property
    def error_flag(self) -> torch.Tensor | None:
        """The device-side error bits of every sample since the last :meth:`check` (an int32
        tensor of one element, read without a host sync by fused checks), or None before the first
        sample."""
        return self._error_flag

    def init_random(self, seed: int | None = None) -> None:
        """Set the seed (a random one, logged, when None) and restart every counter."""
        if seed is None:
            seed = secrets.randbits(31)
            logger.info("sampler seed %d", seed)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise DataTypeError(f"seed must be an int, got {seed!r}")
        self._seed = int(seed) & 0x7FFFFFFF
        for counter in self._counters.values():
            counter.zero_()

    def register_actions(self, data_manager: Any, action_name: str, num_actions: int, is_deterministic: bool = False) -> None:
        """Declare that ``action_name`` is sampled from ``num_actions`` probabilities per head
        (or, when ``is_deterministic``, from a Gaussian with one mean per action dimension)."""
        shape = data_manager.get_shape(action_name)
        if len(shape) not in (2, 3) or shape[0] != data_manager.num_envs:
            raise DataShapeError(
                f"action placeholder '{action_name}' has shape {shape}; expected (num_envs={data_manager.num_envs}, "
                f"num_agents, num_heads) or (num_envs, num_agents) for one head"
            )
        if not isinstance(num_actions, (int, np.integer)) or num_actions < 1:
            raise DataShapeError(f"num_actions must be a positive int, got {num_actions!r}")
        self._registered[action_name] = (int(num_actions), bool(is_deterministic))

    def _counter(self, data_manager: Any, action_name: str, head: int, rows: int) -> torch.Tensor:
        key = (action_name, head)
        counter = self._counters.get(key)
        if counter is None:
            counter = torch.zeros(rows, dtype=torch.int32, device=data_manager.device)
            self._counters[key] = counter
        if self._error_flag is None:
            self._error_flag = torch.zeros(1, dtype=torch.int32, device=data_manager.device)
        return counter

    def _actions(self, data_manager: Any, action_name: str, dist: torch.Tensor, head: int, is_float: bool) -> torch.Tensor:
        """The (E, A, H) view of ``action_name``, after checking ``dist`` and ``head`` against it."""
        if self._seed is None:
            raise SamplerError("call init_random(seed) before sampling")
        if action_name not in self._registered:
            raise SamplerError(f"'{action_name}' is not registered; call register_actions() first")
        actions = _heads_view(data_manager.data_on_device_via_torch(action_name))
        _check_distribution(dist, actions, action_name)
        H = actions.shape[2]
        if not 0 <= head < H:
            raise DataShapeError(f"head={head} is out of range for '{action_name}' with {H} heads")
        want_float = actions.dtype == torch.float32
        if want_float != is_float:
            kind = "float32 (continuous)" if want_float else "int32 (categorical)"
            raise DataTypeError(f"'{action_name}' holds {kind} actions; use the matching sample method")
        return actions

    def sample(
        self,
        data_manager: Any,
        distribution: torch.Tensor,
        action_name: str,
        use_argmax: bool = False,
        head: int = 0,
        check: bool = True,
        log_probs: torch.Tensor | None = None,
        accumulate_log_probs: bool = False,
    ) -> None:
        """Draw one categorical action per (env, agent) row into column ``head`` of ``action_name``.

        Args:
            distribution: (num_envs, num_agents, num_actions) float32 probabilities on the device.
            use_argmax: take the most probable action (first on ties) instead of sampling.
            check: raise at once if probabilities are NaN/negative or do not sum to 1 (+-1e-3).
                This reads a flag from the device; a training loop passes False and calls
                :meth:`check` once per iteration.
            log_probs: optional float32 (num_envs, num_agents) tensor receiving log p(action)
                (written in the same kernel: no extra launches).
            accumulate_log_probs: add to ``log_probs`` instead of overwriting (multi-head actions).

        Raises:
            SamplerError: bad probabilities (with ``check``), or not initialized / registered.
        """
        actions = self._actions(data_manager, action_name, distribution, head, is_float=False)
        dist = distribution.contiguous()
        E, A, H = actions.shape
        rows, n = E * A, dist.shape[2]
        counter = self._counter(data_manager, action_name, head, rows)
        lp, mode = self._log_prob_arg(log_probs, (E, A), 2 if accumulate_log_probs else 1)
        args = [dist, actions, counter, self._error_flag, lp, rows, n, H, head, self._seed,
                stream_id(action_name, head), int(bool(use_argmax)), mode]
        self._fm.launch("sample_actions", args, grid=(-(-rows // THREADS_PER_BLOCK), 1), block=(THREADS_PER_BLOCK, 1, 1))
        if check:
            self.check(dist)

    # ------------------------------------------------------------------ blocks of rows (cpu backend)
    def prepare_rows(self, data_manager: Any, action_name: str, heads: Sequence[Any], is_gaussian: bool,
                     rows: int) -> None:
        """Before :meth:`sample_rows` calls on blocks of ``action_name``'s rows (from several
        threads): a whole-batch sample's argument checks on ``heads`` (a policy's head outputs: a
        list of (E, A, n) probabilities, or one (mean, std) pair of (E, A, d)) and its ``rows``
        per-row counters created."""
        for h, dist in enumerate([heads[0][0]] if is_gaussian else heads):  # a Gaussian: its mean, head 0
            self._actions(data_manager, action_name, dist, h, is_float=is_gaussian)
            self._counter(data_manager, action_name, h, rows)

    def sample_rows(self, action_name: str, heads: Sequence[Any], is_gaussian: bool, actions: torch.Tensor,
                    first: int, log_probs: torch.Tensor, error_flag: np.ndarray, greedy: bool) -> None:
        """cpu backend: sample the block of ``action_name``'s rows that starts at row ``first`` (env
        x agent) with the draws a whole-batch sample gives those rows (:meth:`prepare_rows` first).

        Shapes: ``heads`` as for :meth:`prepare_rows`, cut to the block's envs; ``actions``: the
        block's (E_b, A, columns) (or (E_b, A)) view of the placeholder; ``log_probs``: (E_b, A);
        ``error_flag``: (1,) int32 error bits of this block (:meth:`add_error_bits`).
        """
        rows = actions.shape[0] * actions.shape[1]
        columns = actions.shape[2] if actions.dim() == 3 else 1
        if is_gaussian:
            mean, std = heads[0]
            counter = self._counters[(action_name, 0)][first : first + rows]
            cpu_kernels.sample_gaussian_action_rows(
                first, mean.contiguous(), std.contiguous(), actions, counter, error_flag, log_probs, rows, columns,
                self._seed, stream_id(action_name, 0), int(greedy), 1)
            return
        for h, probs in enumerate(heads):
            counter = self._counters[(action_name, h)][first : first + rows]
            cpu_kernels.sample_action_rows(
                first, probs.contiguous(), actions, counter, error_flag, log_probs, rows, probs.shape[-1], columns,
                h, self._seed, stream_id(action_name, h), int(greedy), 2 if h > 0 else 1)

    def add_error_bits(self, bits: int) -> None:
        """Add error bits found by :meth:`sample_rows` to the flag :meth:`check` reads."""
        self._error_flag.bitwise_or_(bits)

    def fits_heads(self, data_manager: Any, action_name: str, num_heads: int, joint_name: str | None = None) -> bool:
        """True when :meth:`sample_heads` takes ``num_heads`` categorical heads of ``action_name``
        (and, given ``joint_name``, copies them into that joint placeholder): 1 to
        :data:`MAX_SAMPLE_HEADS` heads, one per column of int32 placeholders. Otherwise sample the
        heads one at a time with :meth:`sample` (and copy them with ``index_copy_``)."""
        if not self._has_heads_kernel or action_name not in self._registered or not 1 <= num_heads <= MAX_SAMPLE_HEADS:
            return False
        names = (action_name,) if joint_name is None else (action_name, joint_name)
        views = [_heads_view(data_manager.data_on_device_via_torch(n)) for n in names]
        return all(v.dtype == torch.int32 and v.shape[2] == num_heads and v.shape[0] == views[0].shape[0]
                   for v in views)

    def sample_heads(
        self,
        data_manager: Any,
        heads: Sequence[torch.Tensor],
        action_name: str,
        *,
        use_argmax: bool = False,
        check: bool = False,
        log_probs: torch.Tensor | None = None,
        joint: tuple[str, torch.Tensor] | None = None,
    ) -> None:
        """Draw every categorical head of ``action_name`` in one kernel launch.

        Bit for bit what one :meth:`sample` per head (``head=h``, ``log_probs`` written by head 0
        and accumulated by the others) followed by
        ``joint_placeholder.index_copy_(1, agent_index, actions)`` gives: the same draws, actions,
        joint log-probability, counters and error bits. No host synchronisation (unless ``check``)
        and nothing allocated that outlives the call, so a CUDA graph can capture it.

        Args:
            heads: one (num_envs, num_agents, n_h) float32 probability tensor per column of
                ``action_name`` (1 to :data:`MAX_SAMPLE_HEADS`; heads may differ in size).
            use_argmax: take each head's most probable action (first on ties) instead of sampling.
            check: raise at once on bad probabilities (reads a flag from the device; see
                :meth:`sample`).
            log_probs: optional float32 (num_envs, num_agents) tensor receiving the joint
                log-probability of the sampled actions.
            joint: ``(joint_name, agent_index)``: also write the actions into the joint
                placeholder ``joint_name`` (num_envs, N, num_heads) at the agents ``agent_index``
                ((num_agents,) int64 on the device: this placeholder's agents among the N).

        Raises:
            DataShapeError: more heads than :data:`MAX_SAMPLE_HEADS` (sample them one at a time
                with :meth:`sample`), a head count other than the placeholder's columns, or
                shapes that do not fit.
            DataTypeError: wrong dtypes or devices.
            SamplerError: bad probabilities (with ``check``), or not initialized / registered.
        """
        num_heads = len(heads)
        if not 1 <= num_heads <= MAX_SAMPLE_HEADS:
            raise DataShapeError(
                f"got {num_heads} heads for '{action_name}'; sample_heads takes 1 to {MAX_SAMPLE_HEADS} "
                f"(sample more heads one at a time with sample(..., head=h))"
            )
        actions = self._actions(data_manager, action_name, heads[0], 0, is_float=False)
        E, A, H = actions.shape
        if num_heads != H:
            raise DataShapeError(
                f"got {num_heads} heads for '{action_name}', which has {H} columns; pass one probability "
                f"tensor per column (or sample single heads with sample(..., head=h))"
            )
        rows = E * A
        null = 0 if self._fm.has_kernels else None
        probs: list[Any] = [null] * MAX_SAMPLE_HEADS
        counters: list[Any] = [null] * MAX_SAMPLE_HEADS
        sizes = [0] * MAX_SAMPLE_HEADS
        streams = [0] * MAX_SAMPLE_HEADS
        for h, dist in enumerate(heads):
            if h:
                _check_distribution(dist, actions, action_name)
            if dist.shape[2] < 1:
                raise DataShapeError(f"head {h} of '{action_name}' has no actions (shape {tuple(dist.shape)})")
            probs[h] = dist.contiguous()
            counters[h] = self._counter(data_manager, action_name, h, rows)
            sizes[h] = dist.shape[2]
            streams[h] = stream_id(action_name, h)
        lp, _ = self._log_prob_arg(log_probs, (E, A), 1)
        joint_actions, agent_index, joint_agents = null, null, 0
        if joint is not None:
            joint_actions, agent_index = self._joint_arg(data_manager, joint, actions, action_name)
            joint_agents = joint_actions.shape[1]
        args = [*probs, *counters, *sizes, *streams, actions, self._error_flag, lp, joint_actions, agent_index,
                rows, H, A, joint_agents, self._seed, int(bool(use_argmax))]
        self._fm.launch("sample_action_heads", args, grid=(-(-rows // THREADS_PER_BLOCK), 1),
                        block=(THREADS_PER_BLOCK, 1, 1))
        if check:
            self.check(heads)

    @staticmethod
    def _joint_arg(data_manager: Any, joint: Any, actions: torch.Tensor,
                   action_name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The checked ``(joint placeholder (E, N, H) view, agent index)`` of ``sample_heads``' ``joint``."""
        if not isinstance(joint, (tuple, list)) or len(joint) != 2 or not isinstance(joint[0], str):
            raise DataTypeError(f"joint must be (joint_placeholder_name, agent_index), got {joint!r}")
        name, index = joint
        if name == action_name:
            raise DataShapeError(f"joint placeholder '{name}' is the sampled placeholder itself; pass joint=None")
        target = _heads_view(data_manager.data_on_device_via_torch(name))
        E, A, H = actions.shape
        if target.dtype != torch.int32 or target.shape[0] != E or target.shape[2] != H or target.shape[1] < A:
            raise DataShapeError(
                f"joint placeholder '{name}' is {target.dtype} {tuple(target.shape)}; expected int32 "
                f"(num_envs={E}, N >= {A}, {H}) to take the actions of '{action_name}'"
            )
        if not isinstance(index, torch.Tensor) or index.dtype != torch.int64 or tuple(index.shape) != (A,):
            desc = f"{index.dtype} {tuple(index.shape)}" if isinstance(index, torch.Tensor) else type(index).__name__
            raise DataTypeError(f"agent_index must be an int64 tensor of shape ({A},), got {desc}")
        if index.device != actions.device or not index.is_contiguous():
            raise DataTypeError(f"agent_index must be contiguous and on {actions.device}, got {index.device}")
        return target, index

    def sample_gaussian(
        self,
        data_manager: Any,
        mean: torch.Tensor,
        std: torch.Tensor,
        action_name: str,
        deterministic: bool = False,
        check: bool = True,
        log_probs: torch.Tensor | None = None,
    ) -> None:
        """Draw ``mean + std * N(0, 1)`` per action dimension into float32 ``action_name``.

        ``log_probs`` (optional, (num_envs, num_agents) float32) receives the joint log-density.

        Shapes:
            mean, std: (num_envs, num_agents, action_dim), action_dim = num_heads of the placeholder.
        """
        actions = self._actions(data_manager, action_name, mean, 0, is_float=True)
        E, A, H = actions.shape
        if tuple(mean.shape) != (E, A, H) or tuple(std.shape) != (E, A, H):
            raise DataShapeError(
                f"mean {tuple(mean.shape)} and std {tuple(std.shape)} must both have shape {(E, A, H)}"
            )
        if std.dtype != torch.float32 or std.device != mean.device:
            raise DataTypeError("std must be float32 on the same device as mean")
        rows = E * A
        counter = self._counter(data_manager, action_name, 0, rows)
        lp, mode = self._log_prob_arg(log_probs, (E, A), 1)
        args = [mean.contiguous(), std.contiguous(), actions, counter, self._error_flag, lp, rows, H, self._seed,
                stream_id(action_name, 0), int(bool(deterministic)), mode]
        self._fm.launch("sample_gaussian_actions", args, grid=(-(-rows // THREADS_PER_BLOCK), 1), block=(THREADS_PER_BLOCK, 1, 1))
        if check:
            self.check(mean)

    def _log_prob_arg(self, log_probs: torch.Tensor | None, shape: tuple[int, int], mode: int) -> tuple[Any, int]:
        if log_probs is None:
            return (0 if self._fm.has_kernels else None), 0
        if log_probs.dtype != torch.float32 or tuple(log_probs.shape) != shape or not log_probs.is_contiguous():
            raise DataShapeError(f"log_probs must be a contiguous float32 tensor of shape {shape}, got "
                                 f"{log_probs.dtype} {tuple(log_probs.shape)}")
        return log_probs, mode

    def check(self, distribution: torch.Tensor | Sequence[torch.Tensor] | None = None) -> None:
        """Raise :class:`SamplerError` if any sample since the last check saw bad inputs.

        ``distribution`` (a (num_envs, num_agents, n) tensor, or one per head) only adds the first
        bad row to the message."""
        flag = 0 if self._error_flag is None else int(self._error_flag.item())
        if not flag:
            return
        self._error_flag.zero_()
        if flag & ERROR_BAD_INDEX:
            raise SamplerError(
                "sample_heads got an agent index outside the joint placeholder (those rows were not "
                "written): pass joint=(name, agent_index) with indices in 0 .. num_agents - 1"
            )
        reasons = {ERROR_BAD_VALUE: "NaN or negative values",
                   ERROR_BAD_SUM: "rows whose probabilities do not sum to 1 (tolerance 1e-3)"}
        problems = [text for bit, text in reasons.items() if flag & bit]
        heads = [distribution] if isinstance(distribution, torch.Tensor) else list(distribution or ())
        detail = ""
        for h, dist in enumerate(heads):
            if not isinstance(dist, torch.Tensor) or dist.dim() != 3:
                continue
            d = dist.detach().float().cpu()
            bad = ~torch.isfinite(d).all(-1) | (d < 0).any(-1) | ((d.sum(-1) - 1).abs() > 1e-3)
            idx = bad.nonzero()
            if len(idx):
                e, a = idx[0].tolist()
                head = f"head {h}, " if len(heads) > 1 else ""
                detail = f"; first bad row: {head}env {e}, agent {a}: {d[e, a].tolist()}"
                break
        raise SamplerError(
            f"the sampler received {' and '.join(problems)}{detail}. Pass softmax probabilities "
            f"(check the policy for NaN: lower the learning rate or clip gradients)"
        )

    @staticmethod
    def assign(data_manager: Any, actions: Any, action_name: str) -> None:
        """Write ``actions`` (same shape and dtype kind) into the action array (for tests and
        debugging; 2.7.1's ``PyCUDASampler.assign``)."""
        data_manager.assign(action_name, actions)

    def counters_state(self) -> dict[str, torch.Tensor]:
        """Counters by ``action/head`` (for checkpoints)."""
        return {f"{k[0]}/{k[1]}": v.clone() for k, v in self._counters.items()}

    def load_counters_state(self, state: dict[str, torch.Tensor]) -> None:
        """Restore counters saved by :meth:`counters_state`."""
        for key, value in state.items():
            name, head = key.rsplit("/", 1)
            self._counters.setdefault((name, int(head)), value.clone()).copy_(value)


def _heads_view(actions: torch.Tensor) -> torch.Tensor:
    """An action placeholder as (num_envs, num_agents, num_heads) (a 2-d one gets one head column)."""
    return actions.view(*actions.shape, 1) if actions.dim() == 2 else actions


def _check_distribution(dist: Any, actions: torch.Tensor, action_name: str) -> None:
    """Raise unless ``dist`` is a float32 (E, A, n) tensor on the device of ``actions`` (E, A, H)."""
    if not isinstance(dist, torch.Tensor):
        raise DataTypeError(f"distribution must be a torch tensor, got {type(dist).__name__}")
    if dist.dtype != torch.float32:
        raise DataTypeError(f"distribution has dtype {dist.dtype}; pass float32 (use .float())")
    if dist.is_cuda != actions.is_cuda or (dist.is_cuda and dist.get_device() != actions.get_device()):
        raise DataTypeError(f"distribution is on {dist.device} but '{action_name}' is on {actions.device}")
    E, A = actions.shape[:2]
    if dist.dim() != 3 or dist.shape[:2] != (E, A):
        raise DataShapeError(
            f"distribution has shape {tuple(dist.shape)}; expected (num_envs={E}, num_agents={A}, n) "
            f"to match '{action_name}'"
        )


# names used by the reference
PyCUDASampler = Sampler
CUDASampler = Sampler
