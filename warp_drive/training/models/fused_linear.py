"""``relu(x @ W^T + b)`` in one GEMM on CUDA: the ReLU runs in the GEMM's epilogue.

A trunk layer written as ``nn.Linear`` then ``nn.ReLU`` costs two kernels and one extra write and
read of the activations; ``torch._addmm_activation`` fuses the ReLU into the cuBLASLt GEMM. It has
no derivative in PyTorch, so :class:`_LinearReLU` supplies the backward (the same three products
and ReLU mask autograd would build). Float32 CUDA inputs outside autocast and ``torch.compile`` take the fused path
(:func:`fused_path`); everything else runs the plain ``relu(linear(x))``.
"""

from __future__ import annotations

import torch

Tensor = torch.Tensor

_FUSED_OP = getattr(torch, "_addmm_activation", None)


class _LinearReLU(torch.autograd.Function):
    """Fused forward on 2-D input; backward through the saved output (the ReLU mask)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:  # type: ignore[override]
        out = _FUSED_OP(bias, x, weight.t())
        ctx.save_for_backward(x, weight, out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:  # type: ignore[override]
        x, weight, out = ctx.saved_tensors
        grad_pre = torch.ops.aten.threshold_backward(grad, out, 0)
        grad_x = grad_pre @ weight if ctx.needs_input_grad[0] else None
        grad_w = grad_pre.t() @ x if ctx.needs_input_grad[1] else None
        grad_b = grad_pre.sum(0) if ctx.needs_input_grad[2] else None
        return grad_x, grad_w, grad_b


def fused_path(x: Tensor, linear: torch.nn.Linear) -> bool:
    """Whether :func:`linear_relu` fuses for this input and layer."""
    return (
        _FUSED_OP is not None
        and x.is_cuda
        and x.dtype == torch.float32
        and linear.weight.dtype == torch.float32
        and linear.bias is not None
        and not _cuda_autocast_enabled()
        and not _compiling()
    )


def _compiling() -> bool:
    """Inside ``torch.compile``'s tracing: Inductor fuses the ReLU itself (trainer.compile)."""
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(is_compiling()) if is_compiling is not None else False


def _cuda_autocast_enabled() -> bool:
    try:
        return torch.is_autocast_enabled("cuda")
    except TypeError:  # torch < 2.4 takes no device; its no-argument form is CUDA's
        return torch.is_autocast_enabled()


def linear_relu(x: Tensor, linear: torch.nn.Linear) -> Tensor:
    """``relu(linear(x))`` for input ``(*lead, in_features)``; one fused GEMM where
    :func:`fused_path` allows."""
    if not fused_path(x, linear):
        return torch.relu(linear(x))
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if torch.is_grad_enabled() and (x.requires_grad or linear.weight.requires_grad or linear.bias.requires_grad):
        out = _LinearReLU.apply(x2, linear.weight, linear.bias)
    else:
        out = _FUSED_OP(linear.bias, x2, linear.weight.t())
    return out.reshape(*lead, out.shape[-1])
