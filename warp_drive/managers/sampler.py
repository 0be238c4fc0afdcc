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
from typing import Any

import numpy as np
import torch

from warp_drive.errors import DataShapeError, DataTypeError, SamplerError
from warp_drive.managers.function_manager import FunctionManager

logger = logging.getLogger(__name__)

THREADS_PER_BLOCK = 256
ERROR_BAD_VALUE = 1
ERROR_BAD_SUM = 2


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
        self._seed: int | None = None
        self._counters: dict[tuple[str, int], torch.Tensor] = {}
        self._registered: dict[str, tuple[int, bool]] = {}
        self._error_flag: torch.Tensor | None = None

    @property
    def seed(self) -> int | None:
        return self._seed

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
        if self._seed is None:
            raise SamplerError("call init_random(seed) before sampling")
        if action_name not in self._registered:
            raise SamplerError(f"'{action_name}' is not registered; call register_actions() first")
        actions = data_manager.data_on_device_via_torch(action_name)
        if actions.dim() == 2:  # (num_envs, num_agents): one head
            actions = actions.view(*actions.shape, 1)
        if not isinstance(dist, torch.Tensor):
            raise DataTypeError(f"distribution must be a torch tensor, got {type(dist).__name__}")
        if dist.dtype != torch.float32:
            raise DataTypeError(f"distribution has dtype {dist.dtype}; pass float32 (use .float())")
        if dist.is_cuda != actions.is_cuda or (dist.is_cuda and dist.get_device() != actions.get_device()):
            raise DataTypeError(f"distribution is on {dist.device} but '{action_name}' is on {actions.device}")
        E, A, H = actions.shape
        if dist.dim() != 3 or dist.shape[:2] != (E, A):
            raise DataShapeError(
                f"distribution has shape {tuple(dist.shape)}; expected (num_envs={E}, num_agents={A}, n) "
                f"to match '{action_name}'"
            )
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

    def check(self, distribution: torch.Tensor | None = None) -> None:
        """Raise :class:`SamplerError` if any sample since the last check saw bad inputs."""
        if self._error_flag is None:
            return
        flag = int(self._error_flag.item())
        if not flag:
            return
        self._error_flag.zero_()
        problems = []
        if flag & ERROR_BAD_VALUE:
            problems.append("NaN or negative values")
        if flag & ERROR_BAD_SUM:
            problems.append("rows whose probabilities do not sum to 1 (tolerance 1e-3)")
        detail = ""
        if distribution is not None and distribution.dim() == 3:
            d = distribution.detach().float().cpu()
            bad = ~torch.isfinite(d).all(-1) | (d < 0).any(-1) | ((d.sum(-1) - 1).abs() > 1e-3)
            idx = bad.nonzero()
            if len(idx):
                e, a = idx[0].tolist()
                detail = f"; first bad row: env {e}, agent {a}: {d[e, a].tolist()}"
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
            counter = self._counters.get((name, int(head)))
            if counter is None:
                self._counters[(name, int(head))] = value.clone()
            else:
                counter.copy_(value)


# names used by the reference
PyCUDASampler = Sampler
CUDASampler = Sampler
