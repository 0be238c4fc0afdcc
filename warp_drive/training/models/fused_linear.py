"""``relu(x @ W^T + b)`` in one GEMM on CUDA: the ReLU runs in the GEMM's epilogue, in float32 (TF32) or bfloat16.

A trunk layer written as ``nn.Linear`` then ``nn.ReLU`` costs two kernels and one extra write and read of the
activations; ``torch._addmm_activation`` fuses the ReLU into the cuBLASLt GEMM. It has no derivative in PyTorch, so
the op ``warp_drive::linear_relu`` (a ``torch.library`` custom op) supplies the backward: the ReLU mask, two GEMMs
and the bias sum autograd would build. As a custom op it stays one extern GEMM under ``torch.compile`` (Inductor would
otherwise split it into a GEMM and a separate bias + ReLU pass over the activations).

Under CUDA autocast the layer casts its input, weight and bias to the autocast dtype itself and runs the same fused
GEMM (autocast's own path is the unfused ``relu(linear(x))``). Inputs whose feature count leaves rows off 16-byte
boundaries (71 float32 or bfloat16 features: a Tag observation) are zero-padded to the next such width, weight
included, so cuBLAS takes its aligned tensor-core kernels instead of the slow ``align1`` ones; the padding adds zeros
to every product, so the result is the same. Off CUDA, everything runs the plain ``relu(linear(x))``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

Tensor = torch.Tensor

_FUSED_OP = getattr(torch, "_addmm_activation", None)

#: pad unaligned feature counts on CUDA (see the module docstring); benchmarks flip it to measure what it pays
ALIGN = True


@torch.library.custom_op("warp_drive::linear_relu", mutates_args=())
def _linear_relu_op(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``relu(x @ weight^T + bias)`` for 2-D ``x``, the ReLU in the GEMM's epilogue."""
    return _FUSED_OP(bias, x, weight.t())


@_linear_relu_op.register_fake
def _(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    return x.new_empty(x.shape[0], weight.shape[0])


def _setup_context(ctx, inputs, output):  # noqa: ANN001 - torch.library's signature
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output)


def _backward(ctx, grad: Tensor):  # noqa: ANN001, ANN202 - torch.library's signature
    x, weight, out = ctx.saved_tensors
    grad_pre = torch.ops.aten.threshold_backward(grad, out, 0)
    grad_x = grad_pre @ weight if ctx.needs_input_grad[0] else None
    grad_w = grad_pre.t() @ x if ctx.needs_input_grad[1] else None
    grad_b = grad_pre.sum(0) if ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_b


_linear_relu_op.register_autograd(_backward, setup_context=_setup_context)


def fused_path(x: Tensor, linear: torch.nn.Linear) -> bool:
    """Whether :func:`linear_relu` fuses for this input and layer: a CUDA input, a float32 layer with a bias, and
    float32 input outside autocast or any input under bfloat16 / float16 autocast."""
    if _FUSED_OP is None or not x.is_cuda or linear.bias is None or linear.weight.dtype != torch.float32:
        return False
    return _cuda_autocast_enabled() or x.dtype == torch.float32


def compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype a CUDA layer's product runs in: the autocast dtype inside CUDA autocast, else ``x``'s."""
    return torch.get_autocast_dtype("cuda") if _cuda_autocast_enabled() else x.dtype


def _cuda_autocast_enabled() -> bool:
    try:
        return torch.is_autocast_enabled("cuda")
    except TypeError:  # torch < 2.4 takes no device; its no-argument form is CUDA's
        return torch.is_autocast_enabled()


def aligned_width(features: int, dtype: torch.dtype) -> int:
    """The smallest width >= ``features`` whose rows are whole 16-byte multiples in ``dtype``."""
    per = max(1, 16 // torch.empty(0, dtype=dtype).element_size())
    return -(-features // per) * per


def pad_features(x: Tensor, dtype: torch.dtype, width: int) -> Tensor:
    """``x`` (2-D) in ``dtype`` with its features zero-padded to ``width`` (one copy, or a cast alone when ``width``
    is its own). Autograd flows through it."""
    if width == x.shape[1]:
        return x.to(dtype)
    if x.requires_grad:
        return F.pad(x.to(dtype), (0, width - x.shape[1]))
    out = x.new_empty(x.shape[0], width, dtype=dtype)
    out[:, : x.shape[1]].copy_(x)
    out[:, x.shape[1] :].zero_()
    return out


def _cuda_width(features: int, x: Tensor, dtype: torch.dtype) -> int:
    """The width a CUDA product pads ``features`` to (:data:`ALIGN`); ``features`` itself elsewhere."""
    return aligned_width(features, dtype) if ALIGN and x.is_cuda else features


def linear_relu(x: Tensor, linear: torch.nn.Linear) -> Tensor:
    """``relu(linear(x))`` for input ``(*lead, in_features)``; one fused GEMM where :func:`fused_path` allows."""
    if not fused_path(x, linear):
        return torch.relu(linear(x))
    dtype = compute_dtype(x)
    lead = x.shape[:-1]
    with torch.autocast("cuda", enabled=False):
        width = _cuda_width(x.shape[-1], x, dtype)
        x2 = pad_features(x.reshape(-1, x.shape[-1]), dtype, width)
        weight = linear.weight.to(dtype)
        if width != x.shape[-1]:
            weight = F.pad(weight, (0, width - x.shape[-1]))
        out = _linear_relu_op(x2, weight, linear.bias.to(dtype))
    return out.reshape(*lead, out.shape[-1])


def padded_linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``F.linear(x, weight, bias)``; on CUDA with the output features zero-padded to a 16-byte multiple for the
    product (aligned cuBLAS kernels) and sliced back (a view with the padded row stride)."""
    outputs = weight.shape[0]
    width = _cuda_width(outputs, x, compute_dtype(x)) if x.is_cuda else outputs
    if width == outputs:
        return F.linear(x, weight, bias)
    out = F.linear(x, F.pad(weight, (0, 0, 0, width - outputs)), F.pad(bias, (0, width - outputs)))
    return out[..., :outputs]
