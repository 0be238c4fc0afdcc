"""The policy MLP's kernels alone: the rollout forward and the update's forward + backward of a Tag policy
(71 -> 256 -> 256 -> 21 + 21 + 1) at the paper's scale, in PyTorch as the trainer runs them.

For each precision (TF32 float32 products, bfloat16), times (CUDA events, median of ``--repeats``):

* ``rollout``: a no-grad forward of ``--rollout-rows`` rows (2,000 envs x 1,000 agents: one env step of the paper's
  config) to per-head probabilities and values;
* ``update``: forward, a loss on the probabilities and values, and backward to every weight, over ``--update-rows``
  rows (``--compile``: also compiled by Inductor).

Each is timed with the CUDA layers' feature padding (:data:`~warp_drive.training.models.fused_linear.ALIGN`) on
(``pytorch``) and off (``pytorch_unaligned``). Prints TFLOP/s (from the layers' shapes: 2 x in x out per row per
layer, x3 for forward + backward) and the fraction of the dense bf16 peak; writes ``mlp_kernels_<GPU>.json``.
Usage (GPU machine): ``python benchmarks/bench_mlp_kernels.py [--rollout-rows 2000000] [--update-rows 4000000]``.

(Hand-written Triton kernels for the whole MLP, rollout and update, were timed here in session 19 and removed:
2.5x and 2x slower than these PyTorch paths; ``results/fused_mlp_triton_removed_NVIDIA_H100_80GB_HBM3.json``.)
"""

from __future__ import annotations

import argparse
from typing import Any

import torch

from bench_learner import _events_ms, peaks
from common import environment, write_results


def _time(fn: Any, repeats: int) -> float:
    """Median device milliseconds of ``fn()`` after one warm-up call (the kernels compile there)."""
    fn()
    torch.cuda.synchronize()
    return _events_ms(fn, repeats)


def main() -> None:
    from warp_drive.training.models import fused_linear
    from warp_drive.training.models.fully_connected import FullyConnected

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollout-rows", type=int, default=2_000_000)
    ap.add_argument("--update-rows", type=int, default=4_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile of the PyTorch update")
    args = ap.parse_args()
    env = environment()
    peak, _ = peaks(env.get("cuda_device") or "")
    torch.manual_seed(0)
    model = FullyConnected(71, [21, 21], (256, 256)).cuda()
    flops_row = sum(2 * m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear))
    rows_out: list[dict[str, Any]] = []

    def report(phase: str, precision: str, impl: str, ms: float, flops: float) -> None:
        tf = flops / ms / 1e9
        row = {"phase": phase, "precision": precision, "impl": impl, "ms": round(ms, 3),
               "tflops": round(tf, 1), "bf16_peak_fraction": round(tf / peak, 4) if peak else None}
        rows_out.append(row)
        print(f"{phase:8s} {precision:5s} {impl:17s} {ms:9.3f} ms {tf:7.1f} TFLOP/s"
              + (f" ({100 * tf / peak:4.1f}% of bf16 peak)" if peak else ""), flush=True)

    torch.backends.cuda.matmul.allow_tf32 = True
    obs = torch.randn(args.rollout_rows, 71, device="cuda")
    for precision in ("tf32", "bf16"):
        bf16 = precision == "bf16"
        flops = args.rollout_rows * flops_row
        with torch.no_grad():
            def plain() -> Any:
                with torch.autocast("cuda", torch.bfloat16, enabled=bf16):
                    return model(obs)
            for align in (True, False):
                fused_linear.ALIGN = align
                report("rollout", precision, "pytorch" if align else "pytorch_unaligned",
                       _time(plain, args.repeats), flops)
            fused_linear.ALIGN = True
    del obs
    obs = torch.randn(args.update_rows, 71, device="cuda")
    weights = [torch.randn(args.update_rows, n, device="cuda") for n in (21, 21)]

    def step(forward: Any) -> Any:
        def run() -> None:
            probs, values = forward(obs)
            loss = sum((w * p.clamp_min(1e-8).log()).mean() for w, p in zip(weights, probs)) + (values ** 2).mean()
            loss.backward()
        return run

    for precision in ("tf32", "bf16"):
        bf16 = precision == "bf16"
        flops = 3 * args.update_rows * flops_row

        def plain(o: Any) -> Any:
            with torch.autocast("cuda", torch.bfloat16, enabled=bf16):
                probs, values = model(o)
            return [p.float() for p in probs], values.float()
        for align in (True, False):
            fused_linear.ALIGN = align
            report("update", precision, "pytorch" if align else "pytorch_unaligned",
                   _time(step(plain), args.repeats), flops)
        fused_linear.ALIGN = True
        if args.compile:
            try:
                report("update", precision, "compiled", _time(torch.compile(step(plain)), args.repeats), flops)
            except Exception as e:  # noqa: BLE001 - say so, go on
                print(f"update {precision} compiled: {type(e).__name__}: {str(e)[:200]}")
    print(f"-> {write_results('mlp_kernels', {'rollout_rows': args.rollout_rows, 'update_rows': args.update_rows, 'rows': rows_out})}")


if __name__ == "__main__":
    main()
