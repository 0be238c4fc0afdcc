"""The same env stepped by its Numba kernel and by its CUDA C kernel: env steps/s and launch overhead.

For each env with both steps (CartPole and Tag continuous) and each
``num_envs``, the step alone is timed on both backends (warm-up first, synchronised clock), as env
steps/s, after checking that both backends produced the same state (a faster number cannot come from
doing less). Launch overhead: host time per step launch with one env replica (the kernel is tiny,
so the host path is what is measured), the same through a CUDA graph of the Numba steps.

Usage (GPU machine): ``python benchmarks/bench_numba_vs_cuda.py [--steps 1000]``; results JSON in
``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch

from common import environment, write_results

# keep these stable across merges
NUM_ENVS = (1, 1024, 16384, 131072)
WARMUP = 20


def envs() -> dict[str, Any]:
    from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    out: dict[str, Any] = {"cartpole": lambda: ClassicControlCartPoleEnv(episode_length=500, seed=1)}
    if getattr(TagContinuous, "numba_source", None):
        out["tag_continuous"] = lambda: TagContinuous(num_taggers=5, num_runners=20, episode_length=500, seed=1)
    else:
        print("tag_continuous: no Numba step yet (TagContinuous.numba_source is unset): skipped")
    return out


def steps_per_s(wrapper: Any, steps: int) -> float:
    for _ in range(WARMUP):
        wrapper.step_all_envs()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        wrapper.step_all_envs()
    torch.cuda.synchronize()
    return wrapper.n_envs * steps / (time.perf_counter() - start)


def graphed_us_per_step(wrapper: Any, steps: int) -> float:
    """Host+device time per Numba step when ``steps`` steps replay as one CUDA graph."""
    for _ in range(WARMUP):
        wrapper.step_all_envs()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    with torch.cuda.graph(graph, stream=side):
        for _ in range(steps):
            wrapper.step_all_envs()
    graph.replay()
    torch.cuda.synchronize()
    start = time.perf_counter()
    graph.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e6


def main() -> None:
    from warp_drive.env.env_wrapper import EnvWrapper

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--num-envs", type=int, nargs="+", default=list(NUM_ENVS))
    args = ap.parse_args()
    rows = []
    for name, make in envs().items():
        for num_envs in args.num_envs:
            w = {b: EnvWrapper(make(), num_envs=num_envs, env_backend=b) for b in ("pycuda", "numba")}
            for wrapper in w.values():
                wrapper.reset_all_envs()
            rng = np.random.default_rng(0)
            actions = rng.integers(0, 2, size=w["numba"].cuda_data_manager.get_shape("sampled_actions")).astype(np.int32)
            for wrapper in w.values():  # same actions, same steps: the states must agree before timing
                wrapper.cuda_data_manager.assign("sampled_actions", actions)
                for _ in range(5):
                    wrapper.step_all_envs()
            states = [wr.cuda_data_manager.pull_data_from_device("_timestep_") for wr in w.values()]
            np.testing.assert_array_equal(*states)
            row = {"env": name, "num_envs": num_envs}
            for backend, wrapper in w.items():
                row[f"{backend}_env_steps_per_s"] = round(steps_per_s(wrapper, args.steps))
            if num_envs == 1:
                for backend in w:
                    row[f"{backend}_launch_us"] = round(1e6 / row[f"{backend}_env_steps_per_s"], 2)
                row["numba_graph_us_per_step"] = round(graphed_us_per_step(w["numba"], args.steps), 2)
            row["numba_over_cuda"] = round(row["numba_env_steps_per_s"] / row["pycuda_env_steps_per_s"], 3)
            print(row, flush=True)
            rows.append(row)
    path = write_results("numba_vs_cuda", {"environment": environment(), "steps": args.steps, "rows": rows})
    print(f"-> {path}")


if __name__ == "__main__":
    main()
