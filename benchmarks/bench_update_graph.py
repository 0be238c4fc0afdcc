"""The CUDA-graph-captured update against the eager one, side by side in one process (GPU).

Trains Tag continuous on the published run config with this project's chosen settings
(``learning_side_by_side.ours_config``: 500 envs, PPO, bf16 update) with both teams' updates at 4 epochs x
4 minibatches (round 3's defaults: the runners default to 1 epoch since round 6) and on the same with
the taggers' update at 8 epochs x 16 minibatches, each with ``trainer.use_cuda_graph``
false (eager rollout and update) and true (both captured), and reports milliseconds per training
iteration (``train``), per update (timed from a synchronized start to the GPU's end) and env steps
per second::

    python benchmarks/bench_update_graph.py [--iters 30]

Results: ``benchmarks/results/update_graph_<GPU>.json`` (``$WARP_DRIVE_BENCH_RESULTS`` instead, if set).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # warp_drive and example_envs from this tree
from common import write_results
from learning_side_by_side import RESULTS, build_trainer, ours_config, release

VARIANTS = {
    "chosen-4x4": ["policy.runner.num_epochs=4"],
    "tagger-8x16": ["policy.runner.num_epochs=4", "policy.tagger.num_epochs=8", "policy.tagger.num_minibatches=16"],
}


def measure(overrides: list[str], graph: bool, iters: int) -> dict:
    t = build_trainer(ours_config([*overrides, f"trainer.use_cuda_graph={str(graph).lower()}"]))
    t.train(2)  # warm-up: capture, allocator, cuBLAS handles
    torch.cuda.synchronize()
    t.perf.update(rollout=0.0, training=0.0, total=0.0, steps=0)
    start = time.perf_counter()
    t.train(iters)
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    steps = t.perf["steps"]
    update_s = 0.0
    for _ in range(iters):  # the same iterations through the engine's calls, the update timed to the GPU's end
        batches = t.collect()
        torch.cuda.synchronize()
        tick = time.perf_counter()
        t.update_policies(batches)
        torch.cuda.synchronize()
        update_s += time.perf_counter() - tick
        t.end_iteration()
    row = {"use_cuda_graph": graph, "iterations": iters,
           "update_ms_per_iter": round(1e3 * update_s / iters, 2),
           "wall_ms_per_iter": round(1e3 * wall / iters, 2),
           "env_steps_per_s": round(steps / wall),
           "update_graphs": sorted(tag for tag, p in t.policies.items() if getattr(p, "graphed", None) is not None)}
    release(t)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args()
    rows = {}
    for name, overrides in VARIANTS.items():
        eager, graphed = (measure(overrides, g, args.iters) for g in (False, True))
        rows[name] = {"overrides": overrides, "eager": eager, "graphed": graphed,
                      "update_speedup": round(eager["update_ms_per_iter"] / graphed["update_ms_per_iter"], 2),
                      "end_to_end_speedup": round(graphed["env_steps_per_s"] / eager["env_steps_per_s"], 2)}
        print(name, rows[name], flush=True)
    print("written", write_results("update_graph", {"config": "published Tag config, ours_config()", "variants": rows},
                                   RESULTS))


if __name__ == "__main__":
    main()
