"""When a policy's MLP runs as fused Triton kernels: the rollout's forward (:mod:`.triton_policy_forward`) and
the update's forward and backward (:mod:`.triton_mlp_train`).

``trainer.fused_rollout: true`` (off by default until it measures faster: ``benchmarks/bench_fused_mlp.py``) lets the rollout run a policy's no-grad forward through
:func:`~warp_drive.training.models.triton_policy_forward.mlp_heads_forward` where the model and device allow:
a :class:`~warp_drive.training.models.fully_connected.FullyConnected` with ReLU and one or two hidden layers of
at most 256 units, 1 to 4 categorical heads (at most 127 actions in all), no observation normalisation,
tensor observations (no dict, so no action mask), float32 weights, on a CUDA device with Triton. Everything
else runs the PyTorch forward. The outputs are what the model's forward returns: the probabilities of each head
and the values, float32.

``trainer.fused_update: true`` (off by default, likewise) does the same for the update's forward with gradients
(:class:`FusedTraining`) where the model is not wrapped for distributed training (DistributedDataParallel's
gradient hooks are armed by its own forward).
"""

from __future__ import annotations

import importlib.util
import logging

import torch
from torch import nn

from warp_drive.training.models.fused_limits import MAX_HEADS, MAX_OUTPUTS, MAX_WIDTH

Tensor = torch.Tensor
logger = logging.getLogger(__name__)


def unsupported_reason(model: nn.Module, device: torch.device) -> str | None:
    """Why the fused forward cannot run ``model`` on ``device``, or None when it can."""
    from warp_drive.training.models.fully_connected import FullyConnected

    model = getattr(model, "module", model)  # DistributedDataParallel
    if device.type != "cuda":
        return "not a CUDA device"
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed"
    if type(model) is not FullyConnected:
        return f"the model is {type(model).__name__}, not FullyConnected"
    if model.activation != "relu":
        return f"activation {model.activation!r} (the kernel has ReLU)"
    if model.action_spec.is_gaussian:
        return "Gaussian (Box) actions"
    if model.obs_keys is not None:
        return "dict observations"
    if model.obs_normalizer is not None:
        return "normalize_obs"
    linears = [m for m in model.trunk if isinstance(m, nn.Linear)]
    if not 1 <= len(linears) <= 2:
        return f"{len(linears)} hidden layers (the kernel takes 1 or 2)"
    if max(m.out_features for m in linears) > MAX_WIDTH:
        return f"a hidden layer wider than {MAX_WIDTH}"
    heads = model.action_spec.categorical
    if not 1 <= len(heads) <= MAX_HEADS or sum(heads) + 1 > MAX_OUTPUTS:
        return f"heads {list(heads)} (the kernel takes 1 to {MAX_HEADS} heads, {MAX_OUTPUTS - 1} actions in all)"
    if any(p.dtype != torch.float32 for p in model.parameters()):
        return "weights that are not float32"
    return None


class FusedActing:
    """The rollout forward of one :class:`FullyConnected` as one kernel launch per call.

    Args:
        model: the model (:func:`unsupported_reason` must return None for it).
        bf16: bfloat16 matrix products (``trainer.rollout_precision: bf16``); else float32 inputs, as TF32
            when ``torch.backends.cuda.matmul.allow_tf32`` is set (the GPU trainer sets it) or exact.
    """

    def __init__(self, model: nn.Module, bf16: bool) -> None:
        self.model = getattr(model, "module", model)
        self.bf16 = bf16
        self.linears = [m for m in self.model.trunk if isinstance(m, nn.Linear)]
        self.head_sizes = list(self.model.action_spec.categorical)

    def rows(self, obs: Tensor) -> tuple[torch.Size, Tensor]:
        """``(leading shape, (rows, obs_size) observations with unit stride along features)`` of ``obs``."""
        m = self.model
        lead = obs.shape[: obs.dim() - len(m.obs_shapes[""])]
        x = m.flatten_obs(obs)[0].reshape(-1, m.obs_size)
        return lead, x if x.stride(-1) == 1 else x.contiguous()

    def precision(self) -> str:
        if self.bf16:
            return "bf16"
        return "tf32" if torch.backends.cuda.matmul.allow_tf32 else "ieee"

    def __call__(self, obs: Tensor) -> tuple[list[Tensor], Tensor]:
        from warp_drive.training.models.triton_policy_forward import mlp_heads_forward

        m = self.model
        lead, x = self.rows(obs)
        cached = m._head_weights
        weight, bias = cached if cached is not None else m._concat_head_weights()
        probs, values = mlp_heads_forward(
            x, [(lin.weight, lin.bias) for lin in self.linears], weight, bias, self.head_sizes, self.precision())
        return [p.view(*lead, p.shape[-1]) for p in probs], values.view(lead)


def fused_acting(model: nn.Module, device: torch.device, bf16: bool) -> FusedActing | None:
    """A :class:`FusedActing` for ``model``, or None (logged at debug level with the reason) where it cannot run."""
    reason = unsupported_reason(model, device)
    if reason is not None:
        logger.debug("trainer.fused_rollout: the PyTorch forward runs (%s)", reason)
        return None
    return FusedActing(model, bf16)


class FusedTraining:
    """The update's forward of one :class:`FullyConnected` with gradients to its weights: one kernel forward, one
    kernel backward and three GEMMs (:func:`~warp_drive.training.models.triton_mlp_train.mlp_train`), then each
    head's softmax in PyTorch (autograd through it as through the model's own).

    Args:
        model: the model, unwrapped (:func:`unsupported_reason` must return None for it).
        bf16: bfloat16 products and saved activations (``trainer.update_precision: bf16``); else float32, the
            products in TF32 when ``torch.backends.cuda.matmul.allow_tf32`` is set.
    """

    def __init__(self, model: nn.Module, bf16: bool) -> None:
        self.acting = FusedActing(model, bf16)
        self.model = self.acting.model

    def __call__(self, obs: Tensor) -> tuple[list[Tensor], Tensor]:
        from warp_drive.training.models.triton_mlp_train import mlp_train

        m = self.model
        lead, x = self.acting.rows(obs)
        weight, bias = m._concat_head_weights()
        out = mlp_train(x, [(lin.weight, lin.bias) for lin in self.acting.linears], weight, bias,
                        self.acting.precision())
        *logits, values = torch.split(out, [*self.acting.head_sizes, 1], dim=-1)
        probs = [torch.softmax(z, dim=-1).view(*lead, z.shape[-1]) for z in logits]
        return probs, values.reshape(lead)


def fused_training(model: nn.Module, device: torch.device, bf16: bool) -> FusedTraining | None:
    """A :class:`FusedTraining` for ``model``, or None (logged at debug level with the reason)."""
    if getattr(model, "module", None) is not None:
        logger.debug("trainer.fused_update: the PyTorch forward runs (the model is wrapped for distributed training)")
        return None
    reason = unsupported_reason(model, device)
    if reason is not None:
        logger.debug("trainer.fused_update: the PyTorch forward runs (%s)", reason)
        return None
    return FusedTraining(model, bf16)
