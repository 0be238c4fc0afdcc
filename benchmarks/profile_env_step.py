"""A few eager env steps of one bench_env_step config, for Nsight Compute.

Usage on the GPU machine::

    ncu --clock-control none -k regex:CudaTag --launch-skip 5 --launch-count 1 --set full \\
        python3 benchmarks/profile_env_step.py --envs 2000 --agents 1000
"""

from __future__ import annotations

import argparse

import torch

from bench_env_step import make


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=2000)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    wrapper, step = make(args.envs, args.agents)
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    obs = wrapper.cuda_data_manager.data_on_device_via_torch("observations")
    if not torch.isfinite(obs).all():
        raise SystemExit("observations are not finite")
    print(f"profiled {args.steps} steps of {args.envs} envs x {args.agents} agents")


if __name__ == "__main__":
    main()
