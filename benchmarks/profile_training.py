"""Top GPU kernels of end-to-end training (torch.profiler), for one bench_end_to_end config.

Usage: ``python benchmarks/profile_training.py [--config tag_continuous_100envs] [--iters 2]``.
Prints the kernels sorted by total GPU time, and the GPU time per iteration.
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from bench_end_to_end import CONFIGS
from common import make_trainer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tag_continuous_100envs")
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--rows", type=int, default=30)
    args = ap.parse_args()
    env_name, overrides, _ = CONFIGS[args.config]
    t = make_trainer(env_name, overrides + ["trainer.num_episodes=100000000", "trainer.seed=0"])
    t.train(2)  # warm-up: compile, capture, allocator
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t.train(args.iters)
        torch.cuda.synchronize()
    events = prof.key_averages()
    total_us = sum(e.self_device_time_total for e in events if e.device_type.name == "CUDA")
    print(f"GPU time per iteration: {total_us / args.iters / 1000:.1f} ms")
    print(events.table(sort_by="self_cuda_time_total", row_limit=args.rows, max_name_column_width=70))


if __name__ == "__main__":
    main()
