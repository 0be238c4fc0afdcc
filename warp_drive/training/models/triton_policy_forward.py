"""The rollout's policy forward of a ReLU MLP with categorical heads as one Triton kernel.

Every env step the rollout runs each policy's network on all its agents' observations: at the paper's scale
(2,000 envs x 1,000 agents) that is 2 M rows through ``obs -> 256 -> 256 -> heads``. In PyTorch that is
three GEMMs, the bias / ReLU passes, a concatenation, a softmax per head and a split: each writes its result
to memory and the next reads it back, so the forward is bound by memory traffic, not by the tensor cores.

:func:`mlp_heads_forward` does it all in one pass per tile of ``BLOCK_M`` rows: the first layer's activations
go to the program's slice of a small scratch buffer (it stays in L2), the second layer is computed in column chunks
that go straight into the heads' logits (its activations are never stored), and the epilogue applies each head's softmax and writes
the probabilities of each head into its own contiguous ``(rows, n_h)`` block and the values into a
``(rows,)`` block of one output buffer: exactly the tensors the sampler reads.

Only this module imports Triton; :mod:`~warp_drive.training.models.fused_mlp` decides when it runs.
Matrix products take float32 inputs as TF32 (``torch.backends.cuda.matmul.allow_tf32``, which the GPU
trainer sets, as cuBLAS does for the PyTorch forward) or exact float32 (``ieee``), or bfloat16 inputs with
float32 accumulation; biases, softmax and the outputs are float32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from warp_drive.training.models.fused_limits import MAX_HEADS

Tensor = torch.Tensor

#: features of the observations read per chunk of the first layer
BLOCK_K = 32
#: the rollout kernel's rows per tile and warps per program, its software-pipeline stages and its programs per SM
#: (a persistent launch: each program loops over tiles); benchmarks/bench_fused_mlp.py measures others
LAUNCH = {"forward": (128, 8), "stages": 2, "programs_per_sm": 2}
#: columns of a hidden layer computed per chunk (and the second layer's K chunk): 32 keeps the kernels within
#: 255 registers on sm_90 with little spilling (AOT-compiled resource counts: tools/triton_resources.py)
BLOCK_N = 32


@triton.jit
def _head_of(col, e0, e1, e2, e3, NUM_HEADS: tl.constexpr):
    """Head index of logit column ``col`` (``NUM_HEADS`` for the value column; more for padding)."""
    head = (col >= e0).to(tl.int32)
    if NUM_HEADS > 1:
        head += (col >= e1).to(tl.int32)
    if NUM_HEADS > 2:
        head += (col >= e2).to(tl.int32)
    if NUM_HEADS > 3:
        head += (col >= e3).to(tl.int32)
    return head


@triton.jit
def _dot(a, b, PRECISION: tl.constexpr):
    if PRECISION == "bf16":
        out = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), out_dtype=tl.float32)
    else:
        out = tl.dot(a, b, input_precision=PRECISION, out_dtype=tl.float32)
    return out


@triton.jit
def _chunk(src_ptr, src_rows, src_stride, row0, K, w_ptr, N, w_stride_n, w_stride_k, n0,
           BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BN: tl.constexpr, PRECISION: tl.constexpr):
    """``src[row0 : row0 + BLOCK_M, :K] @ T[:K, n0 : n0 + BN]`` in float32, where ``T[k, n] = w[n * w_stride_n + k *
    w_stride_k]`` (``src`` has ``src_rows`` rows of row stride ``src_stride``; ``T`` is ``(K, N)``), over K in chunks
    of ``BLOCK_K``: a plain tiled GEMM loop (out-of-range rows and columns read as 0) that Triton pipelines. Offsets
    are 32-bit from 64-bit base pointers (a tile's offsets stay far below 2**31)."""
    local = tl.arange(0, BLOCK_M)
    row_ok = local < src_rows - row0
    src = src_ptr + row0.to(tl.int64) * src_stride
    n = tl.arange(0, BN)
    n_ok = n < N - n0
    w = w_ptr + n0 * w_stride_n
    acc = tl.zeros((BLOCK_M, BN), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = tl.arange(0, BLOCK_K)
        k_ok = k < K - k0
        a = tl.load(src + k0 + local[:, None] * src_stride + k[None, :], mask=row_ok[:, None] & k_ok[None, :],
                    other=0.0)
        b = tl.load(w + k0 * w_stride_k + n[None, :] * w_stride_n + k[:, None] * w_stride_k,
                    mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = _dot(a, b, PRECISION) + acc
    return acc


@triton.jit
def _store_tile(ptr, rows, width, row0, n0, value, BLOCK_M: tl.constexpr, BN: tl.constexpr):
    """``value`` into ``ptr[row0 : row0 + BLOCK_M, n0 : n0 + BN]`` of a ``(rows, width)`` row-major array (clipped)."""
    local = tl.arange(0, BLOCK_M)
    n = tl.arange(0, BN)
    base = ptr + row0.to(tl.int64) * width + n0
    tl.store(base + local[:, None] * width + n[None, :], value.to(ptr.dtype.element_ty),
             mask=(local < rows - row0)[:, None] & (n < width - n0)[None, :])


@triton.jit
def _load_tile(ptr, rows, width, row0, n0, BLOCK_M: tl.constexpr, BN: tl.constexpr):
    """``ptr[row0 : row0 + BLOCK_M, n0 : n0 + BN]`` of a ``(rows, width)`` row-major array (0 outside)."""
    local = tl.arange(0, BLOCK_M)
    n = tl.arange(0, BN)
    base = ptr + row0.to(tl.int64) * width + n0
    return tl.load(base + local[:, None] * width + n[None, :],
                   mask=(local < rows - row0)[:, None] & (n < width - n0)[None, :], other=0.0)


@triton.jit
def _mlp_heads_kernel(
    x_ptr, stride_x, w1_ptr, b1_ptr, w2_ptr, b2_ptr, wh_ptr, bh_ptr, out_ptr, scratch_ptr,
    M, K0, H1, H2, NOUT, e0, e1, e2, e3,
    TWO_LAYERS: tl.constexpr, NUM_HEADS: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BN: tl.constexpr, BOUT: tl.constexpr,
):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    zero = pid * 0  # row 0 of the scratch, as a tensor
    cols = tl.arange(0, BOUT)
    col_ok = cols < NOUT
    local = tl.arange(0, BLOCK_M).to(tl.int64)
    # this program's (BLOCK_M, H1) slice of the scratch buffer: the first layer's activations of its tile, re-read
    # (from L1 / L2) in K chunks by the second layer, so that no (BLOCK_M, H1) tile lives in registers
    scratch = scratch_ptr + pid.to(tl.int64) * BLOCK_M * H1
    for tile in range(pid, tl.cdiv(M, BLOCK_M), programs):
        row0 = zero + tile * BLOCK_M  # a tensor (as ``tile`` is in compiled code; the interpreter gives an int)
        rows = local + row0
        row_ok = rows < M
        logits = tl.zeros((BLOCK_M, BOUT), dtype=tl.float32)
        if TWO_LAYERS:
            tl.debug_barrier()  # the previous tile's second layer has read the scratch
            for n0 in range(0, H1, BN):
                n = n0 + tl.arange(0, BN)
                n_ok = n < H1
                acc = _chunk(x_ptr, M, stride_x, row0, K0, w1_ptr, H1, K0, 1, n0, BLOCK_M, BLOCK_K, BN,
                             PRECISION)
                h = tl.maximum(acc + tl.load(b1_ptr + n, mask=n_ok, other=0.0)[None, :], 0.0)
                _store_tile(scratch, BLOCK_M, H1, zero, n0, h, BLOCK_M, BN)
            tl.debug_barrier()  # the whole first layer is in the scratch
            for j0 in range(0, H2, BN):
                j = j0 + tl.arange(0, BN)
                j_ok = j < H2
                acc = _chunk(scratch, BLOCK_M, H1, zero, H1, w2_ptr, H2, H1, 1, j0, BLOCK_M, BN, BN, PRECISION)
                h = tl.maximum(acc + tl.load(b2_ptr + j, mask=j_ok, other=0.0)[None, :], 0.0)
                wht = tl.load(wh_ptr + cols[None, :] * H2 + j[:, None], mask=j_ok[:, None] & col_ok[None, :], other=0.0)
                logits = _dot(h, wht, PRECISION) + logits
        else:
            for n0 in range(0, H1, BN):
                n = n0 + tl.arange(0, BN)
                n_ok = n < H1
                acc = _chunk(x_ptr, M, stride_x, row0, K0, w1_ptr, H1, K0, 1, n0, BLOCK_M, BLOCK_K, BN,
                             PRECISION)
                h = tl.maximum(acc + tl.load(b1_ptr + n, mask=n_ok, other=0.0)[None, :], 0.0)
                wht = tl.load(wh_ptr + cols[None, :] * H1 + n[:, None], mask=n_ok[:, None] & col_ok[None, :], other=0.0)
                logits = _dot(h, wht, PRECISION) + logits
        bh = tl.load(bh_ptr + cols, mask=col_ok, other=0.0)
        logits += bh[None, :]
        _softmax_store(logits, out_ptr, rows, row_ok, cols, col_ok, M, NOUT, e0, e1, e2, e3, NUM_HEADS, BLOCK_M, BOUT)


@triton.jit
def _softmax_store(logits, out_ptr, rows, row_ok, cols, col_ok, M, NOUT, e0, e1, e2, e3,
                   NUM_HEADS: tl.constexpr, BLOCK_M: tl.constexpr, BOUT: tl.constexpr):
    """Each head's softmax of its logit columns, the value column as it is, stored head by head."""
    # epilogue: a softmax per head; the value column passes through
    head = _head_of(cols, e0, e1, e2, e3, NUM_HEADS)
    is_logit = head < NUM_HEADS
    top = tl.zeros((BLOCK_M, BOUT), dtype=tl.float32)
    for h in tl.static_range(NUM_HEADS):
        sel = (head == h)[None, :]
        m_h = tl.max(tl.where(sel, logits, float("-inf")), axis=1)
        top = tl.where(sel, m_h[:, None], top)
    e = tl.where(is_logit[None, :], tl.exp(logits - top), 0.0)
    total = tl.full((BLOCK_M, BOUT), 1.0, dtype=tl.float32)
    for h in tl.static_range(NUM_HEADS):
        sel = (head == h)[None, :]
        s_h = tl.sum(tl.where(sel, e, 0.0), axis=1)
        total = tl.where(sel, s_h[:, None], total)
    result = tl.where(is_logit[None, :], e / total, logits)
    # head h's probabilities at [M * start_h + row * n_h + (col - start_h)]; the values at [M * (NOUT - 1) + row]
    start = tl.where(head > 0, e0, 0)
    if NUM_HEADS > 1:
        start = tl.where(head > 1, e1, start)
    if NUM_HEADS > 2:
        start = tl.where(head > 2, e2, start)
    if NUM_HEADS > 3:
        start = tl.where(head > 3, e3, start)
    end = tl.where(head == 0, e0, NOUT)
    if NUM_HEADS > 1:
        end = tl.where(head == 1, e1, end)
    if NUM_HEADS > 2:
        end = tl.where(head == 2, e2, end)
    if NUM_HEADS > 3:
        end = tl.where(head == 3, e3, end)
    width = end - start
    offset = start.to(tl.int64)[None, :] * M + rows[:, None] * width[None, :] + (cols - start)[None, :]
    tl.store(out_ptr + offset, result, mask=row_ok[:, None] & col_ok[None, :])


def _pow2(n: int, least: int = 16) -> int:
    return max(least, 1 << (max(n, 1) - 1).bit_length())


def mlp_heads_forward(
    x: Tensor,
    layers: list[tuple[Tensor, Tensor]],
    head_weight: Tensor,
    head_bias: Tensor,
    head_sizes: list[int],
    precision: str,
    block_m: int | None = None,
    num_warps: int | None = None,
) -> tuple[list[Tensor], Tensor]:
    """``softmax`` per head and the value of ``relu(...relu(x @ W1^T + b1)...) @ Wh^T + bh`` in one launch.

    A persistent launch: each program takes tiles of ``block_m`` rows in turn; with two layers it keeps its tile's
    first-layer activations in its slice of a scratch buffer (L2-resident), which the second layer reads in chunks.

    Args:
        x: ``(rows, features)`` observations, float32 (or bfloat16 with ``precision="bf16"``), unit stride
            along features.
        layers: one or two ``(weight (out, in), bias (out,))`` hidden layers, contiguous.
        head_weight, head_bias: the heads' and the value's ``Linear`` concatenated: ``(sum(head_sizes) + 1,
            width)`` and ``(sum(head_sizes) + 1,)``, the value last.
        head_sizes: actions per categorical head (1 to :data:`MAX_HEADS`).
        precision: ``"tf32"``, ``"ieee"`` (float32 products) or ``"bf16"``.
        block_m, num_warps: the tile of rows per program and its warps (default: :data:`LAUNCH`).

    Returns:
        ``([(rows, n_h) probabilities per head], (rows,) values)``: float32 views of one new buffer.
    """
    rows, features = x.shape
    (w1, b1), *rest = layers
    two = len(rest) == 1
    w2, b2 = rest[0] if two else (w1, b1)
    h1, h2 = w1.shape[0], w2.shape[0]
    nout = head_weight.shape[0]
    ends = [sum(head_sizes[: i + 1]) for i in range(len(head_sizes))]
    ends += [nout] * (MAX_HEADS - len(ends))
    out = torch.empty(rows * nout, dtype=torch.float32, device=x.device)
    block_m = block_m or LAUNCH["forward"][0]
    num_warps = num_warps or LAUNCH["forward"][1]
    programs = persistent_programs(x.device, triton.cdiv(rows, block_m))
    act = torch.bfloat16 if precision == "bf16" else torch.float32
    w1, w2, wh = (w.to(act) for w in (w1, w2, head_weight))  # bfloat16: half the bytes every tile reads
    scratch = torch.empty(programs * block_m * h1 if two else 1, dtype=act, device=x.device)
    _mlp_heads_kernel[(programs,)](
        x, x.stride(0), w1, b1, w2, b2, wh, head_bias, out, scratch,
        rows, features, h1, h2, nout, *ends[:MAX_HEADS],
        TWO_LAYERS=two, NUM_HEADS=len(head_sizes), PRECISION=precision,
        BLOCK_M=block_m, BLOCK_K=BLOCK_K, BN=BLOCK_N, BOUT=_pow2(nout),
        num_warps=num_warps, num_stages=LAUNCH["stages"],
    )
    probs, start = [], 0
    for n in head_sizes:
        probs.append(out[start * rows : (start + n) * rows].view(rows, n))
        start += n
    return probs, out[start * rows :]


def persistent_programs(device: torch.device, tiles: int) -> int:
    """Programs of a persistent launch: :data:`LAUNCH`'s ``programs_per_sm`` per SM, at most one per tile."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4
    return max(1, min(tiles, LAUNCH["programs_per_sm"] * sms))
