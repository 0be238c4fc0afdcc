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

from warp_drive.training.models.triton_policy_forward import BLOCK_K, BLOCK_N, _chunk, _dot, _load_tile, _pow2, _store_tile, persistent_programs

Tensor = torch.Tensor

#: launch shapes: rows per tile and warps per program of each kernel, and software-pipeline stages (the backward
#: is a persistent launch: triton_policy_forward.LAUNCH's programs per SM, each looping over tiles and keeping its
#: bias partial sums in registers); benchmarks/bench_fused_mlp.py measures others
LAUNCH = {"forward": (128, 8), "backward": (64, 8), "stages": 2}


@triton.jit
def _train_fwd_kernel(
    x_ptr, stride_x, w1_ptr, b1_ptr, w2_ptr, b2_ptr, wh_ptr, bh_ptr, h1_ptr, h2_ptr, out_ptr,
    M, K0, H1, H2, NOUT,
    TWO_LAYERS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BN: tl.constexpr, BOUT: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    cols = tl.arange(0, BOUT)
    col_ok = cols < NOUT
    out = tl.zeros((BLOCK_M, BOUT), dtype=tl.float32)
    for n0 in range(0, H1, BN):
        n = n0 + tl.arange(0, BN)
        n_ok = n < H1
        acc = _chunk(x_ptr, M, stride_x, pid * BLOCK_M, K0, w1_ptr, H1, K0, 1, n0, BLOCK_M, BLOCK_K, BN, PRECISION)
        h = tl.maximum(acc + tl.load(b1_ptr + n, mask=n_ok, other=0.0)[None, :], 0.0).to(h1_ptr.dtype.element_ty)
        _store_tile(h1_ptr, M, H1, pid * BLOCK_M, n0, h, BLOCK_M, BN)
        if not TWO_LAYERS:
            wht = tl.load(wh_ptr + cols[None, :] * H1 + n[:, None], mask=n_ok[:, None] & col_ok[None, :], other=0.0)
            out = _dot(h, wht, PRECISION) + out
    if TWO_LAYERS:
        tl.debug_barrier()  # the tile's first layer is stored: the second reads it back in chunks (L1 / L2)
        for j0 in range(0, H2, BN):
            j = j0 + tl.arange(0, BN)
            j_ok = j < H2
            acc = _chunk(h1_ptr, M, H1, pid * BLOCK_M, H1, w2_ptr, H2, H1, 1, j0, BLOCK_M, BN, BN, PRECISION)
            h = tl.maximum(acc + tl.load(b2_ptr + j, mask=j_ok, other=0.0)[None, :], 0.0).to(h2_ptr.dtype.element_ty)
            _store_tile(h2_ptr, M, H2, pid * BLOCK_M, j0, h, BLOCK_M, BN)
            wht = tl.load(wh_ptr + cols[None, :] * H2 + j[:, None], mask=j_ok[:, None] & col_ok[None, :], other=0.0)
            out = _dot(h, wht, PRECISION) + out
    out += tl.load(bh_ptr + cols, mask=col_ok, other=0.0)[None, :]
    tl.store(out_ptr + rows[:, None] * NOUT + cols[None, :], out, mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _masked_grad(src_ptr, src_stride, K, w_ptr, w_stride_n, w_stride_k, h_ptr, H, d_ptr, M, row0, n0,
                 BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BN: tl.constexpr, PRECISION: tl.constexpr):
    """``(src @ W)[:, n0 : n0 + BN] * (h[:, n0 : n0 + BN] > 0)`` for the rows from ``row0``, stored to ``d`` (same
    layout as ``h``: ``(M, H)``); returns its column sums."""
    acc = _chunk(src_ptr, M, src_stride, row0, K, w_ptr, H, w_stride_n, w_stride_k, n0, BLOCK_M, BLOCK_K, BN,
                 PRECISION)
    h = _load_tile(h_ptr, M, H, row0, n0, BLOCK_M, BN)
    d = tl.where(h > 0, acc, 0.0)
    _store_tile(d_ptr, M, H, row0, n0, d, BLOCK_M, BN)
    return tl.sum(d, axis=0)


@triton.jit
def _train_bwd_kernel(
    g_ptr, h1_ptr, h2_ptr, w2_ptr, wh_ptr, d1_ptr, d2_ptr, db1_ptr, db2_ptr,
    M, H1, H2, NOUT,
    TWO_LAYERS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BN: tl.constexpr, NB1: tl.constexpr, NB2: tl.constexpr,
):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    db1 = tl.zeros((NB1, BN), dtype=tl.float32)
    db2 = tl.zeros((NB2, BN), dtype=tl.float32)
    for tile in range(pid, tl.cdiv(M, BLOCK_M), programs):
        row0 = pid * 0 + tile * BLOCK_M  # a tensor (as ``tile`` is in compiled code; the interpreter gives an int)
        if TWO_LAYERS:
            # d2 = (dout @ Wh) * (h2 > 0): Wh is (NOUT, H2), so T[k, j] = Wh[k, j]
            for c in tl.static_range(NB2):
                part = _masked_grad(g_ptr, NOUT, NOUT, wh_ptr, 1, H2, h2_ptr, H2, d2_ptr, M, row0, c * BN,
                                    BLOCK_M, BLOCK_K, BN, PRECISION)
                db2 += tl.where(tl.arange(0, NB2)[:, None] == c, part[None, :], 0.0)
            tl.debug_barrier()  # the tile's d2 is stored: d1 reads it back in chunks
            # d1 = (d2 @ W2) * (h1 > 0): W2 is (H2, H1), so T[k, n] = W2[k, n]
            for c in tl.static_range(NB1):
                part = _masked_grad(d2_ptr, H2, H2, w2_ptr, 1, H1, h1_ptr, H1, d1_ptr, M, row0, c * BN,
                                    BLOCK_M, BN, BN, PRECISION)
                db1 += tl.where(tl.arange(0, NB1)[:, None] == c, part[None, :], 0.0)
        else:
            for c in tl.static_range(NB1):
                part = _masked_grad(g_ptr, NOUT, NOUT, wh_ptr, 1, H1, h1_ptr, H1, d1_ptr, M, row0, c * BN,
                                    BLOCK_M, BLOCK_K, BN, PRECISION)
                db1 += tl.where(tl.arange(0, NB1)[:, None] == c, part[None, :], 0.0)
    # per-program partial bias sums: (programs, NB * BN) rows summed by the caller
    chunk = tl.arange(0, BN)[None, :]
    tl.store(db1_ptr + pid * (NB1 * BN) + tl.arange(0, NB1)[:, None] * BN + chunk, db1)
    if TWO_LAYERS:
        tl.store(db2_ptr + pid * (NB2 * BN) + tl.arange(0, NB2)[:, None] * BN + chunk, db2)


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
    w1, w2, wh = (w.to(act) for w in (w1, w2, wh))
    _train_fwd_kernel[(triton.cdiv(rows, block_m),)](
        x, x.stride(0), w1, b1, w2, b2, wh, bh, h1, h2 if two_layers else h1, out, rows, features, h1w, h2w, nout,
        TWO_LAYERS=two_layers, PRECISION=precision, BLOCK_M=block_m, BLOCK_K=BLOCK_K, BN=BLOCK_N, BOUT=_pow2(nout),
        num_warps=warps, num_stages=LAUNCH["stages"])
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
    nb1, nb2 = triton.cdiv(h1w, BLOCK_N), triton.cdiv(lw, BLOCK_N)
    block_m, warps = LAUNCH["backward"]
    programs = persistent_programs(grad.device, triton.cdiv(rows, block_m))
    db_first = torch.empty(programs, nb1 * BLOCK_N, dtype=torch.float32, device=grad.device)
    db_last = torch.empty(programs, nb2 * BLOCK_N, dtype=torch.float32, device=grad.device) if two_layers else db_first
    _train_bwd_kernel[(programs,)](
        grad, h1, h2 if two_layers else h1, w2.to(act), wh.to(act), d1, d2, db_first, db_last, rows, h1w,
        lw if two_layers else h1w, nout,
        TWO_LAYERS=two_layers, PRECISION=precision, BLOCK_M=block_m, BLOCK_K=BLOCK_K, BN=BLOCK_N, NB1=nb1, NB2=nb2,
        num_warps=warps, num_stages=LAUNCH["stages"])
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
        db1 = db_first.sum(0)[:h1w]
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
