"""Host time per kernel launch through each layer (sampler -> function manager -> pycuda).

The eager sampler benchmark is bound by host time, not by the kernel; this splits that time.
Usage: ``python benchmarks/bench_launch_overhead.py [--reps 20000]``.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from common import make_sampler


def per_call_us(fn, reps: int) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20000)
    args = ap.parse_args()
    from warp_drive.services.sampler import stream_id

    E, N, A = 500, 110, 20
    dm, fm, s, probs = make_sampler(E, N, A)
    s.sample(dm, probs, "acts", check=False)
    acts = dm.data_on_device_via_torch("acts")
    counter = s._counters[("acts", 0)]
    flag = s._error_flag
    rows = E * N
    launch_args = [probs, acts, counter, flag, 0, rows, A, 1, 0, 1, stream_id("acts", 0), 0, 0]
    kernel = fm._get_function("sample_actions")
    grid, block = (-(-rows // 256), 1), (256, 1, 1)
    values = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in launch_args]
    res = {
        "sampler_sample_us": per_call_us(lambda: s.sample(dm, probs, "acts", check=False), args.reps),
        "function_manager_launch_us": per_call_us(lambda: fm.launch("sample_actions", launch_args, grid=grid, block=block), args.reps),
        "kernel_launch_us": per_call_us(lambda: kernel.launch(grid, block, None, launch_args), args.reps),
        "kernel_pycuda_style_call_us": per_call_us(lambda: kernel(*launch_args, grid=grid, block=block), args.reps),
        "pycuda_prepared_async_call_us": per_call_us(lambda: kernel.function.prepared_async_call(grid, block, None, *values), args.reps),
        "pycuda_with_shared_size_kwarg_us": per_call_us(
            lambda: kernel.function.prepared_async_call(grid, block, None, *values, shared_size=0), args.reps),
    }
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
