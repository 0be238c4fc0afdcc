"""The update's forward and backward of a ReLU MLP with linear heads, as two Triton kernels and three GEMMs.

The update runs the policy network forward with gradients on every training row and back again. In PyTorch each
layer's forward is a GEMM, a bias add and a ReLU, and its backward a ReLU mask, two GEMMs and a bias sum, each a
pass over ``(rows, width)`` activations: for the small, wide-batch networks of multi-agent RL those passes, not the
products, take most of the time.

* :func:`_train_fwd_kernel`: one pass per tile of rows through both layers and the heads (as the rollout's
  :mod:`~warp_drive.training.models.triton_policy_forward`), writing the two hidden activations (saved for the
  backward: float32, or bfloat16 with ``precision="bf16"``) and the raw outputs (logits of every head, then the
  value) in float32.
* :func:`_train_bwd_kernel`: from the outputs' gradient, ``d2 = (dout @ Wh) * (h2 > 0)`` and
  ``d1 = (d2 @ W2) * (h1 > 0)`` in one pass (the second layer's gradient never leaves the tile before the first
  layer's is formed from it), plus per-program partial bias sums.
* the weight gradients ``dout^T h2``, ``d2^T h1`` and ``d1^T x``: cuBLAS GEMMs over all rows.

:func:`mlp_train` is a ``torch.library`` custom op with its autograd formula, so autograd, ``torch.compile`` (which
treats it as opaque) and CUDA-graph capture all take it. Only the update of a model that
:func:`~warp_drive.training.models.fused_mlp.unsupported_reason` accepts runs it (``trainer.fused_update``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from warp_drive.training.models.triton_policy_forward import BLOCK_K, BLOCK_N2, _dot, _pow2

Tensor = torch.Tensor

#: the backward's column chunk of the first layer
BLOCK_N1 = 64
#: launch shapes: rows per tile and warps per program of each kernel, and the backward's programs per SM (each
#: loops over tiles, keeping its bias partial sums in registers); benchmarks/bench_fused_mlp.py measures others
LAUNCH = {"forward": (64, 8), "backward": (64, 8), "backward_programs_per_sm": 4}


@triton.jit
def _train_fwd_kernel(
    x_ptr, stride_x, w1_ptr, b1_ptr, w2_ptr, b2_ptr, wh_ptr, bh_ptr, h1_ptr, h2_ptr, out_ptr,
    M, K0, H1, H2, NOUT,
    TWO_LAYERS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BH1: tl.constexpr, BN2: tl.constexpr, BOUT: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    n1 = tl.arange(0, BH1)
    n1_ok = n1 < H1
    acc1 = tl.zeros((BLOCK_M, BH1), dtype=tl.float32)
    for k0 in range(0, K0, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < K0
        x = tl.load(x_ptr + rows[:, None] * stride_x + k[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w1t = tl.load(w1_ptr + n1[None, :] * K0 + k[:, None], mask=k_ok[:, None] & n1_ok[None, :], other=0.0)
        acc1 = _dot(x, w1t, PRECISION) + acc1
    b1 = tl.load(b1_ptr + n1, mask=n1_ok, other=0.0)
    h1 = tl.maximum(acc1 + b1[None, :], 0.0).to(h1_ptr.dtype.element_ty)
    tl.store(h1_ptr + rows[:, None] * H1 + n1[None, :], h1, mask=row_ok[:, None] & n1_ok[None, :])
    cols = tl.arange(0, BOUT)
    col_ok = cols < NOUT
    out = tl.zeros((BLOCK_M, BOUT), dtype=tl.float32)
    if TWO_LAYERS:
        for j0 in range(0, H2, BN2):
            j = j0 + tl.arange(0, BN2)
            j_ok = j < H2
            w2t = tl.load(w2_ptr + j[None, :] * H1 + n1[:, None], mask=n1_ok[:, None] & j_ok[None, :], other=0.0)
            b2 = tl.load(b2_ptr + j, mask=j_ok, other=0.0)
            h2 = tl.maximum(_dot(h1, w2t, PRECISION) + b2[None, :], 0.0).to(h2_ptr.dtype.element_ty)
            tl.store(h2_ptr + rows[:, None] * H2 + j[None, :], h2, mask=row_ok[:, None] & j_ok[None, :])
            wht = tl.load(wh_ptr + cols[None, :] * H2 + j[:, None], mask=j_ok[:, None] & col_ok[None, :], other=0.0)
            out = _dot(h2, wht, PRECISION) + out
    else:
        wht = tl.load(wh_ptr + cols[None, :] * H1 + n1[:, None], mask=n1_ok[:, None] & col_ok[None, :], other=0.0)
        out = _dot(h1, wht, PRECISION)
    bh = tl.load(bh_ptr + cols, mask=col_ok, other=0.0)
    out += bh[None, :]
    tl.store(out_ptr + rows[:, None] * NOUT + cols[None, :], out, mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _train_bwd_kernel(
    g_ptr, h1_ptr, h2_ptr, w2_ptr, wh_ptr, d1_ptr, d2_ptr, db1_ptr, db2_ptr,
    M, H1, H2, NOUT,
    TWO_LAYERS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BHL: tl.constexpr, BN1: tl.constexpr, BOUT: tl.constexpr, NB1: tl.constexpr,
):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    cols = tl.arange(0, BOUT)
    col_ok = cols < NOUT
    last = H2 if TWO_LAYERS else H1
    nl = tl.arange(0, BHL)
    nl_ok = nl < last
    # Wh (NOUT, last): the tile the outputs' gradient multiplies, loaded once per program
    wh = tl.load(wh_ptr + cols[:, None] * last + nl[None, :], mask=col_ok[:, None] & nl_ok[None, :], other=0.0)
    db_last = tl.zeros((BHL,), dtype=tl.float32)
    db_first = tl.zeros((NB1, BN1), dtype=tl.float32)
    for tile in range(pid, tl.cdiv(M, BLOCK_M), programs):
        rows = tl.arange(0, BLOCK_M).to(tl.int64) + tile * BLOCK_M
        row_ok = rows < M
        g = tl.load(g_ptr + rows[:, None] * NOUT + cols[None, :], mask=row_ok[:, None] & col_ok[None, :], other=0.0)
        hl_ptr = h2_ptr if TWO_LAYERS else h1_ptr
        hl = tl.load(hl_ptr + rows[:, None] * last + nl[None, :], mask=row_ok[:, None] & nl_ok[None, :], other=0.0)
        d = tl.where(hl > 0, _dot(g, wh, PRECISION), 0.0)
        db_last += tl.sum(d, axis=0)
        if TWO_LAYERS:
            d = d.to(d2_ptr.dtype.element_ty)
            tl.store(d2_ptr + rows[:, None] * H2 + nl[None, :], d, mask=row_ok[:, None] & nl_ok[None, :])
            for c in tl.static_range(NB1):
                j = c * BN1 + tl.arange(0, BN1)
                j_ok = j < H1
                w2 = tl.load(w2_ptr + nl[:, None] * H1 + j[None, :], mask=nl_ok[:, None] & j_ok[None, :], other=0.0)
                h1 = tl.load(h1_ptr + rows[:, None] * H1 + j[None, :], mask=row_ok[:, None] & j_ok[None, :], other=0.0)
                d1 = tl.where(h1 > 0, _dot(d, w2, PRECISION), 0.0)
                part = tl.sum(d1, axis=0)
                db_first += tl.where(tl.arange(0, NB1)[:, None] == c, part[None, :], 0.0)
                tl.store(d1_ptr + rows[:, None] * H1 + j[None, :], d1.to(d1_ptr.dtype.element_ty),
                         mask=row_ok[:, None] & j_ok[None, :])
        else:
            tl.store(d1_ptr + rows[:, None] * H1 + nl[None, :], d.to(d1_ptr.dtype.element_ty),
                     mask=row_ok[:, None] & nl_ok[None, :])
    # per-program partial bias sums: (programs, width) rows summed by the caller
    tl.store(db2_ptr + pid * BHL + nl, db_last)
    if TWO_LAYERS:
        tl.store(db1_ptr + pid * (NB1 * BN1) + tl.arange(0, NB1)[:, None] * BN1 + tl.arange(0, BN1)[None, :], db_first)


def _act_dtype(precision: str) -> torch.dtype:
    return torch.bfloat16 if precision == "bf16" else torch.float32


@torch.library.custom_op("warp_drive::mlp_train_forward", mutates_args=())
def mlp_train_forward(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, wh: Tensor, bh: Tensor,
                      two_layers: bool, precision: str) -> tuple[Tensor, Tensor, Tensor]:
    """``(out, h1, h2)``: the raw outputs ``(rows, NOUT)`` float32 and the saved hidden activations (``h2`` empty
    with one layer: a custom op's outputs may not alias)."""
    rows, features = x.shape
    h1w, nout = w1.shape[0], wh.shape[0]
    h2w = w2.shape[0] if two_layers else h1w
    act = _act_dtype(precision)
    h1 = torch.empty(rows, h1w, dtype=act, device=x.device)
    h2 = torch.empty(rows if two_layers else 0, h2w, dtype=act, device=x.device)
    out = torch.empty(rows, nout, dtype=torch.float32, device=x.device)
    block_m, warps = LAUNCH["forward"]
    _train_fwd_kernel[(triton.cdiv(rows, block_m),)](
        x, x.stride(0), w1, b1, w2, b2, wh, bh, h1, h2 if two_layers else h1, out, rows, features, h1w, h2w, nout,
        TWO_LAYERS=two_layers, PRECISION=precision, BLOCK_M=block_m, BLOCK_K=BLOCK_K, BH1=_pow2(h1w),
        BN2=min(BLOCK_N2, _pow2(h2w)), BOUT=_pow2(nout), num_warps=warps)
    return out, h1, h2


@mlp_train_forward.register_fake
def _(x, w1, b1, w2, b2, wh, bh, two_layers, precision):
    rows, act = x.shape[0], _act_dtype(precision)
    h1 = x.new_empty(rows, w1.shape[0], dtype=act)
    h2 = x.new_empty(rows, w2.shape[0], dtype=act) if two_layers else x.new_empty(0, w1.shape[0], dtype=act)
    return x.new_empty(rows, wh.shape[0], dtype=torch.float32), h1, h2


@torch.library.custom_op("warp_drive::mlp_train_backward", mutates_args=())
def mlp_train_backward(grad: Tensor, x: Tensor, h1: Tensor, h2: Tensor, w2: Tensor, wh: Tensor, two_layers: bool,
                       precision: str) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """``(dW1, db1, dW2, db2, dWh, dbh)`` from the outputs' gradient ``grad`` (``dW2``/``db2`` empty with one
    layer)."""
    rows = grad.shape[0]
    nout, h1w = grad.shape[1], h1.shape[1]
    last = h2 if two_layers else h1
    lw = last.shape[1]
    act = _act_dtype(precision)
    grad = grad.contiguous()
    d1 = torch.empty(rows, h1w, dtype=act, device=grad.device)
    d2 = torch.empty(rows, lw, dtype=act, device=grad.device) if two_layers else d1
    bhl, bn1 = _pow2(lw), min(BLOCK_N1, _pow2(h1w))
    nb1 = triton.cdiv(h1w, bn1)
    sms = torch.cuda.get_device_properties(grad.device).multi_processor_count if grad.is_cuda else 4
    block_m, warps = LAUNCH["backward"]
    programs = max(1, min(triton.cdiv(rows, block_m), LAUNCH["backward_programs_per_sm"] * sms))
    db_last = torch.empty(programs, bhl, dtype=torch.float32, device=grad.device)
    db_first = torch.empty(programs, nb1 * bn1, dtype=torch.float32, device=grad.device) if two_layers else db_last
    _train_bwd_kernel[(programs,)](
        grad, h1, h2, w2, wh, d1, d2, db_first, db_last, rows, h1w, lw if two_layers else h1w, nout,
        TWO_LAYERS=two_layers, PRECISION=precision, BLOCK_M=block_m, BHL=bhl, BN1=bn1, BOUT=_pow2(nout), NB1=nb1,
        num_warps=warps)
    g = grad.to(act)
    xs = x.to(act)
    dwh = torch.mm(g.t(), last).float()
    dbh = grad.sum(0)
    if two_layers:
        dw2 = torch.mm(d2.t(), h1).float()
        db2 = db_last.sum(0)[:lw]
        db1 = db_first.sum(0)[:h1w]
    else:
        dw2, db2 = grad.new_empty(0), grad.new_empty(0)
        db1 = db_last.sum(0)[:h1w]
    dw1 = torch.mm(d1.t(), xs).float()
    return dw1, db1, dw2, db2, dwh, dbh


@mlp_train_backward.register_fake
def _(grad, x, h1, h2, w2, wh, two_layers, precision):
    f32 = dict(dtype=torch.float32)
    h1w, lw = h1.shape[1], (h2 if two_layers else h1).shape[1]
    dw2 = grad.new_empty(w2.shape, **f32) if two_layers else grad.new_empty(0, **f32)
    db2 = grad.new_empty(lw, **f32) if two_layers else grad.new_empty(0, **f32)
    return (grad.new_empty(h1w, x.shape[1], **f32), grad.new_empty(h1w, **f32), dw2, db2,
            grad.new_empty(wh.shape, **f32), grad.new_empty(wh.shape[0], **f32))


def _setup_context(ctx, inputs, output):
    x, w1, b1, w2, b2, wh, bh, two_layers, precision = inputs
    _, h1, h2 = output
    ctx.save_for_backward(x, h1, h2, w2, wh)
    ctx.two_layers, ctx.precision = two_layers, precision


def _backward(ctx, grad_out, grad_h1, grad_h2):
    x, h1, h2, w2, wh = ctx.saved_tensors
    dw1, db1, dw2, db2, dwh, dbh = mlp_train_backward(grad_out, x, h1, h2, w2, wh, ctx.two_layers, ctx.precision)
    if not ctx.two_layers:
        dw2 = db2 = None
    return None, dw1, db1, dw2, db2, dwh, dbh, None, None


mlp_train_forward.register_autograd(_backward, setup_context=_setup_context)


def mlp_train(x: Tensor, layers: list[tuple[Tensor, Tensor]], head_weight: Tensor, head_bias: Tensor,
              precision: str) -> Tensor:
    """``relu(...relu(x @ W1^T + b1)...) @ Wh^T + bh`` with gradients to every weight and bias (not to ``x``).

    Args:
        x: ``(rows, features)`` float32 observations (unit stride along features).
        layers: one or two ``(weight (out, in), bias (out,))`` hidden layers, at most 256 wide.
        head_weight, head_bias: the output layer (heads and value concatenated), at most 128 outputs.
        precision: ``"tf32"``, ``"ieee"`` (float32 products and activations) or ``"bf16"`` (bfloat16 products and
            saved activations, float32 accumulation and outputs).

    Returns:
        ``(rows, outputs)`` float32.
    """
    (w1, b1), *rest = layers
    two = len(rest) == 1
    w2, b2 = rest[0] if two else (w1, b1)
    out, _, _ = mlp_train_forward(x, w1, b1, w2, b2, head_weight, head_bias, two, precision)
    return out
