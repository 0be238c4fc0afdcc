"""Compile the fused MLP kernels ahead of time for sm_90 (no GPU needed) and print each launch shape's shared memory,
registers per thread and spilled bytes: what decides the launch shapes in the kernels' ``LAUNCH`` tables.

Triton compiles to a cubin on the CPU; its bundled ``cuobjdump`` reads the resource usage. A shape over 255
registers spills to local memory; one over the SM's shared memory (227 KiB on the H100) cannot launch.

    python tools/triton_resources.py [--precision bf16 tf32] [--hidden 256]
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from warp_drive.training.models import triton_mlp_train as train
from warp_drive.training.models import triton_policy_forward as forward

CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def resources(fn, pointers: dict[str, str], constants: dict, warps: int, stages: int, arch: int = 90) -> tuple[int, int, int]:
    """``(shared bytes, registers, spill bytes)`` of ``fn`` compiled for ``sm_<arch>`` (other arguments int32)."""
    names = fn.arg_names
    signature = {n: ("*" + pointers[n]) if n in pointers else "constexpr" if n in constants else "i32" for n in names}
    constexprs = {(names.index(n),): v for n, v in constants.items()}
    kernel = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                            target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages})
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin", delete=False) as f:
        f.write(kernel.asm["cubin"])
    usage = subprocess.run([CUOBJDUMP, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    os.unlink(f.name)
    regs, stack = re.search(r"REG:(\d+)", usage), re.search(r"STACK:(\d+)", usage)
    return kernel.metadata.shared, int(regs.group(1)) if regs else -1, int(stack.group(1)) if stack else -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--precision", nargs="+", default=["bf16", "tf32"])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--shapes", nargs="+", default=["64,4,2", "64,8,2", "128,8,2"], help="block_m,warps,stages")
    ap.add_argument("--block-n", nargs="+", type=int, default=[32, 64])
    args = ap.parse_args()
    print(f"{'kernel':10s} {'precision':9s} {'block_m,warps,stages':22s} {'BN':>3s} {'smem B':>7s} {'regs':>4s} {'spill B':>7s}")
    for precision, shape, bn in itertools.product(args.precision, args.shapes, args.block_n):
        bm, warps, stages = (int(v) for v in shape.split(","))
        act = "bf16" if precision == "bf16" else "fp32"
        nb = -(-args.hidden // bn)
        cases = {
            "rollout": (forward._mlp_heads_kernel, {**dict.fromkeys(["x_ptr", "b1_ptr", "b2_ptr", "bh_ptr", "out_ptr"], "fp32"),
                                                    **dict.fromkeys(["w1_ptr", "w2_ptr", "wh_ptr", "scratch_ptr"], act)},
                        dict(TWO_LAYERS=True, NUM_HEADS=2, PRECISION=precision, BLOCK_M=bm, BLOCK_K=32, BN=bn, BOUT=64)),
            "train_fwd": (train._train_fwd_kernel, {**dict.fromkeys(["x_ptr", "b1_ptr", "b2_ptr", "bh_ptr", "out_ptr"], "fp32"),
                                                    **dict.fromkeys(["w1_ptr", "w2_ptr", "wh_ptr", "h1_ptr", "h2_ptr"], act)},
                          dict(TWO_LAYERS=True, PRECISION=precision, BLOCK_M=bm, BLOCK_K=32, BN=bn, BOUT=64)),
            "train_bwd": (train._train_bwd_kernel, {**dict.fromkeys(["g_ptr", "db1_ptr", "db2_ptr"], "fp32"),
                                                    **dict.fromkeys(["h1_ptr", "h2_ptr", "w2_ptr", "wh_ptr", "d1_ptr", "d2_ptr"], act)},
                          dict(TWO_LAYERS=True, PRECISION=precision, BLOCK_M=bm, BLOCK_K=32, BN=bn, NB1=nb, NB2=nb)),
        }
        for name, (fn, pointers, constants) in cases.items():
            try:
                smem, regs, spill = resources(fn, pointers, constants, warps, stages)
                print(f"{name:10s} {precision:9s} {shape:22s} {bn:3d} {smem:7d} {regs:4d} {spill:7d}", flush=True)
            except Exception as e:  # noqa: BLE001 - a shape the compiler refuses: say so and go on
                print(f"{name:10s} {precision:9s} {shape:22s} {bn:3d} {type(e).__name__}: {str(e)[:80]}", flush=True)


if __name__ == "__main__":
    main()
