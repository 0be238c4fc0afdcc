"""The learner's two hot paths, in bfloat16 and compiled by ``torch.compile`` (Inductor) on the GPU.

The rollout runs the policy's forward at every env step; the update runs forward, loss and backward
on every minibatch. For the small MLPs of multi-agent RL most of their GPU time is not the matrix
products but the elementwise and reduction kernels around them: bias adds, the activation and its
backward, softmax, log-probabilities, entropy, the loss terms, dtype casts and the minibatch
gather, each one pass over its tensor. Inductor fuses those passes into a few Triton kernels and
leaves the products to cuBLAS.

* :class:`ActingForward` is the rollout's forward of one policy: ``trainer.rollout_precision: bf16``
  runs it under bfloat16 autocast (the probabilities the sampler reads and the values stay float32),
  ``trainer.compile`` compiles it (in bfloat16 only: see the class).
* :class:`LossFunction` is the update's forward + loss of one policy (the backward of a compiled
  forward is compiled too); it takes the loss coefficients as 0-d tensors, so that a changing
  schedule does not recompile it.

Both keep fixed shapes (``dynamic=False``): a rollout's shapes never change, and an update sees at
most two minibatch sizes (a chunked minibatch's last chunk). Compilation happens in the first
(eager) call, before any CUDA graph is captured, so captured graphs replay the compiled kernels.
On the CPU backend, or without Triton, nothing is compiled and the plain PyTorch path runs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from warp_drive.training.buffers import RolloutBatch
from warp_drive.training.models.masked_input import active_of
from warp_drive.training.utils.minibatch import index_tree, map_tensors

Tensor = torch.Tensor
logger = logging.getLogger(__name__)


def can_compile(device: torch.device) -> bool:
    """Whether ``torch.compile`` can build GPU kernels for ``device`` (a CUDA device with Triton)."""
    return (device.type == "cuda" and hasattr(torch, "compile")
            and importlib.util.find_spec("triton") is not None)


def float32(tree: Any) -> Any:
    """Floating tensors of a (nested) list/tuple/mapping as float32 (a no-op where they already are)."""
    return map_tensors(lambda t: t.float() if t.is_floating_point() else t, tree)


def autocast(device: torch.device, dtype: torch.dtype | None) -> Any:
    """Autocast to ``dtype`` on ``device`` (no cast cache: a CUDA graph must not capture casts cached
    from an earlier region), or no autocast when ``dtype`` is None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype, cache_enabled=False)


#: compiled variants one function may keep: Dynamo keys its cache by code object, so every policy's
#: forward (or loss) shares one cache, each with its own shapes (and an update's last chunk)
RECOMPILE_LIMIT = 64


def _compiled(fn: Callable[..., Any], device: torch.device, enabled: bool, what: str) -> Callable[..., Any]:
    if not enabled:
        return fn
    if not can_compile(device):
        logger.debug("trainer.compile: no Triton GPU backend on %s; %s runs uncompiled", device, what)
        return fn
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):  # the name changed in torch 2.7
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), RECOMPILE_LIMIT))
            break
    return torch.compile(fn, dynamic=False)


class ActingForward:
    """``model(obs)`` for the rollout, in ``dtype`` (None: the model's own) with float32 outputs, compiled
    when ``compile`` and ``dtype`` are set (and the device allows it).

    In float32 the forward is not compiled: there each ``Linear -> ReLU`` already runs as one cuBLASLt GEMM
    with the bias and ReLU in its epilogue (:mod:`~warp_drive.training.models.fused_linear`), and Inductor's
    GEMM plus a separate bias-ReLU kernel measured slower (H100, 2,000 envs x 1,000 agents: 161 ms of rollout
    forward and sampling per iteration compiled, 122 ms not; ``benchmarks/results/learner_*.json``).

    Args:
        model: the policy's model (``forward(obs) -> (head outputs, values)``).
        device: where it runs.
        dtype: autocast dtype (``torch.bfloat16``) or None.
        compile: compile the forward with ``torch.compile``.
    """

    def __init__(self, model: nn.Module, device: torch.device, dtype: torch.dtype | None, compile: bool) -> None:
        self.model, self.device, self.dtype = model, device, dtype
        compile = compile and dtype is not None
        self._fn = _compiled(self._forward, device, compile, "the rollout forward")
        #: the model's no-grad forward may use cached head weights (FullyConnected.cache_head_weights):
        #: not inside a compiled function, whose guards would see a new tensor every rollout
        self.caches_head_weights = not (compile and can_compile(device))

    def _forward(self, obs: Any, *state: Tensor) -> Any:
        if self.dtype is None:
            return self.model(obs, *state)
        with autocast(self.device, self.dtype):
            out = self.model(obs, *state)
        return float32(out)

    def __call__(self, obs: Any, *state: Tensor) -> Any:
        """``model(obs)``, or for a recurrent model ``model(obs, state) -> (outputs, new state)``."""
        return self._fn(obs, *state)


class LossFunction:
    """One policy's update forward + loss: ``(batch, coefficients, advantage_stats, index) -> (loss, metrics,
    values)``, as :func:`~warp_drive.training.algorithms.update.minibatch_loss` computes it, optionally
    on the rows ``index`` of a flat batch (the gather then fuses into the compiled forward).

    Args:
        model: the model (possibly wrapped for distributed training).
        algorithm: its :class:`~warp_drive.training.algorithms.a2c.A2C` or PPO.
        dtype: the forward's autocast dtype, or None.
        compile: compile with ``torch.compile``.
    """

    def __init__(self, model: nn.Module, algorithm: Any, dtype: torch.dtype | None, compile: bool) -> None:
        self.model, self.algorithm, self.dtype = model, algorithm, dtype
        self.device = next(model.parameters()).device
        self.requested = bool(compile)
        self.compiled = self.requested and can_compile(self.device)
        self._fn = _compiled(self._loss, self.device, self.compiled, "the update's loss")

    def _loss(self, batch: dict[str, Any], index: Tensor | None, c_vf: Tensor | float, c_ent: Tensor | float,
              stats: tuple[Tensor, Tensor] | None) -> tuple[Tensor, dict[str, Tensor], Tensor]:
        rows = RolloutBatch.of(batch if index is None else index_tree(batch, index))
        if rows.start_state is not None:  # a recurrent policy's sequences, sequence first: (M, B, ...)
            head_outputs, values = self._sequence_forward(rows)
        else:
            with autocast(self.device, self.dtype):
                head_outputs, values = self.model(rows.obs)
            if self.dtype is not None:
                head_outputs, values = float32(head_outputs), float32(values)
        active = active_of(rows.obs)  # agents in the game (agent_masks.py); None: every sample counts
        loss, metrics = self.algorithm.compute_loss(
            head_outputs, values, rows.actions, rows.advantages, rows.returns, timestep=0,
            old_log_probs=rows.old_log_probs, old_values=rows.old_values, coefficients=(c_vf, c_ent),
            **({} if stats is None else {"advantage_stats": stats}),
            **({} if active is None else {"sample_mask": active}))
        return loss, metrics, values

    def _sequence_forward(self, rows: RolloutBatch) -> tuple[Any, Tensor]:
        """The recurrent model over every sequence's time axis from its start state, reset at the recorded
        episode starts (truncated back-propagation through time over the rollout chunk); outputs sequence first."""
        time_first = lambda t: t.transpose(0, 1)  # noqa: E731
        with autocast(self.device, self.dtype):
            (head_outputs, values), _ = self.model(map_tensors(time_first, rows.obs), rows.start_state,
                                                   time_first(rows.episode_starts))
        head_outputs, values = map_tensors(time_first, head_outputs), time_first(values)
        return (float32(head_outputs), float32(values)) if self.dtype is not None else (head_outputs, values)

    def __call__(self, batch: RolloutBatch | dict[str, Any], coefficients: tuple[Any, Any], *,
                 advantage_stats: tuple[Tensor, Tensor] | None = None,
                 index: Tensor | None = None) -> tuple[Tensor, dict[str, Tensor], Tensor]:
        c_vf, c_ent = coefficients
        if self.compiled and not isinstance(c_vf, Tensor):  # numbers would be baked into the compiled code
            c_vf, c_ent = (torch.tensor(float(c), dtype=torch.float32, device=self.device) for c in (c_vf, c_ent))
        return self._fn(dict(batch), index, c_vf, c_ent, advantage_stats)
