"""Data-parallel scaling: env-steps/s on 1 and N GPUs with the same per-GPU config (torchrun + NCCL).

Usage: ``python benchmarks/bench_multi_gpu.py [--gpus 2] [--iters 10]``. Each process runs its own
Tag continuous replicas (500 envs x 110 agents, batch 50,000 per GPU, A2C, FC 256x256); gradients
are all-reduced by DDP every update. The worker below is what torchrun starts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch

from common import write_results

PER_GPU = ["trainer.num_envs=500", "trainer.train_batch_size=50000", "trainer.num_episodes=100000000", "trainer.seed=0"]


def worker(iters: int) -> None:
    import torch.distributed as dist

    from warp_drive.training.distributed import init_from_env

    ctx = init_from_env("pycuda")
    if not dist.is_initialized():  # one process: a group of one keeps the code path identical
        torch.cuda.set_device(ctx.local_rank)
        dist.init_process_group("nccl")
    t = make_trainer_for_rank(ctx)
    t.train(2)  # warm-up: compile, graph capture, NCCL buckets
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    t.train(iters)
    torch.cuda.synchronize()
    dist.barrier()
    wall = time.perf_counter() - start
    steps = torch.tensor([iters * t.config.trainer.train_batch_size], device="cuda", dtype=torch.float64)
    dist.all_reduce(steps)
    params = torch.cat([q.detach().reshape(-1) for p in t.policies.values() for q in p.model.parameters()])
    gathered = [torch.zeros_like(params) for _ in range(ctx.world_size)]
    dist.all_gather(gathered, params)
    assert all(torch.equal(gathered[0], g) for g in gathered), "ranks hold different weights"
    if ctx.rank == 0:
        print("RESULT " + json.dumps({"gpus": ctx.world_size, "env_steps": float(steps), "wall_s": wall,
                                      "env_steps_per_s": float(steps) / wall}), flush=True)
    dist.destroy_process_group()


def make_trainer_for_rank(ctx):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    from common import TAG_TUTORIAL_A2C

    cfg = load_run_config(get_default_config_path("tag_continuous"), [*TAG_TUTORIAL_A2C, "trainer.env_backend=pycuda", "saving.metrics_log_freq=100000000",
                                                                      "saving.model_params_save_freq=100000000", *PER_GPU])
    env = get_example_env_class("tag_continuous")(**cfg.env)
    w = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend="pycuda", device_id=ctx.local_rank, process_id=ctx.rank)
    return Trainer(w, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, rank=ctx.rank,
                   num_devices=ctx.world_size, results_dir=f"/tmp/mgpu_{ctx.rank}")


def run(gpus: int, iters: int) -> dict:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={gpus}", __file__, "--worker",
           "--iters", str(iters)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=500, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"gpus": gpus, "error": (proc.stderr or proc.stdout)[-1500:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.iters)
        return
    rows = [run(1, args.iters), run(args.gpus, args.iters)]
    out = {"per_gpu_config": PER_GPU, "rows": rows}
    if all("env_steps_per_s" in r for r in rows):
        out["speedup"] = rows[1]["env_steps_per_s"] / rows[0]["env_steps_per_s"]
    print(json.dumps(out, indent=1))
    print("written", write_results("multi_gpu", out))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
