"""The learner against the GPU's limits: GPU time per training iteration split into env step, rollout
forward (with sampling) and update, FLOPs counted from the models' shapes, and the fraction of the
GPU's dense bf16 tensor-core peak and of its memory-bandwidth floor.

Usage: ``python benchmarks/bench_learner.py [--configs NAME ...] [--variants NAME ...] [--iters N]
[--name learner]``. Writes ``benchmarks/results/<name>_<GPU>.json`` (and ``$OUT/<name>.json``).

Per config and variant (a variant is a list of dotted overrides on top of the config):

* ``iteration_ms``: wall time of ``iters`` training iterations as the Trainer runs them (CUDA graphs
  where the config uses them), per iteration; ``env_steps_per_s`` from it.
* ``rollout_ms`` and ``update_ms``: device time of one rollout (``generate_rollout``, graphed when the
  trainer graphs it) and one update (``update``), with CUDA events; ``env_step_ms``: ``steps_per_iter``
  env steps and resets alone, captured in a CUDA graph like the rollout; ``forward_sampling_ms`` =
  rollout - env step.
* FLOPs: per policy, a forward costs ``2 * in * out`` per ``nn.Linear`` per agent row; the rollout runs
  one forward per row and env step (and one at its start), the update ``3x`` a forward (forward,
  input-gradient and weight-gradient products) per row and epoch.
* ``update_tflops`` / ``iteration_tflops`` and their fraction of the dense bf16 peak of :data:`PEAKS`.
* the memory floor: the fewest bytes an iteration must move (each env step writes the observations
  and the forward reads them; the forward writes the head outputs the sampler reads; every epoch
  reads the training batch once: observations, actions, advantages, returns, old log-probabilities),
  over the memory bandwidth of :data:`PEAKS`; ``memory_floor_fraction`` = that time / iteration time.
"""

from __future__ import annotations

import argparse
import importlib
import time
from typing import Any

import torch
from torch import nn

from common import make_trainer, write_results

#: dense bf16 tensor-core peak (TFLOP/s) and memory bandwidth (TB/s) by GPU name (datasheets)
PEAKS = [("H200", 989.0, 4.8), ("H100 PCIe", 756.0, 2.0), ("H100 NVL", 835.0, 3.9), ("H100", 989.0, 3.35),
         ("A100-SXM4-80GB", 312.0, 2.039), ("A100", 312.0, 1.555)]

_PAPER_GRID = round(20.0 * (1000 / 110) ** 0.5, 2)
#: name -> (env, overrides, tutorial A2C settings under the overrides)
CONFIGS: dict[str, tuple[str, list[str], bool]] = {
    "tag_tutorial_100envs": ("tag_continuous", ["trainer.num_envs=100", "trainer.train_batch_size=25000"], True),
    "tag_tutorial_500envs": ("tag_continuous", ["trainer.num_envs=500", "trainer.train_batch_size=50000"], True),
    "tag_bundled": ("tag_continuous", [], False),
    "tag_paper_2000x1000": ("tag_continuous", ["env.num_taggers=90", "env.num_runners=910", f"env.grid_length={_PAPER_GRID}",
                                               "trainer.num_envs=2000", "trainer.train_batch_size=40000"], True),
    "cartpole": ("cartpole", [], False),
}
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "fused": ["trainer.fused_rollout=true", "trainer.fused_update=true"],
    "fused_rollout": ["trainer.fused_rollout=true"],
    "fused_bf16": ["trainer.fused_rollout=true", "trainer.fused_update=true", "trainer.update_precision=bf16",
                   "trainer.rollout_precision=bf16"],
    "bf16": ["trainer.update_precision=bf16", "trainer.rollout_precision=bf16"],
    "bf16_compile": ["trainer.update_precision=bf16", "trainer.rollout_precision=bf16", "trainer.compile=true"],
    "fp32_compile": ["trainer.update_precision=fp32", "trainer.compile=true"],
}


def peaks(gpu: str) -> tuple[float | None, float | None]:
    """``(bf16 TFLOP/s, TB/s)`` of the first :data:`PEAKS` entry whose name is in ``gpu``."""
    for name, tflops, tbps in PEAKS:
        if name.replace(" ", "").lower() in gpu.replace(" ", "").lower():
            return tflops, tbps
    return None, None


def forward_flops_per_row(model: nn.Module) -> int:
    """Multiply-add FLOPs of one forward of one agent row: ``2 * in * out`` per ``nn.Linear``."""
    return sum(2 * m.in_features * m.out_features for m in model.modules() if isinstance(m, nn.Linear))


def work_per_iteration(t: Any) -> dict[str, float]:
    """FLOPs and floor bytes of one training iteration (module docstring)."""
    steps, envs = t.steps_per_iter, t.num_envs
    rollout = update = floor = 0.0
    for p in t.policies.values():
        rows = envs * p.num_agents
        fwd = forward_flops_per_row(p.model)
        obs = getattr(p.model, "obs_size", 0)
        heads = getattr(getattr(p, "action_spec", None), "num_logits", 0) or 0
        rollout += (steps + 1) * rows * fwd
        floor += steps * rows * 4 * (2 * obs + 2 * heads + 2)  # obs written + read; probs written + read; actions
        if p.to_train:
            epochs = p.config.num_epochs or 1
            update += epochs * steps * rows * 3 * fwd
            floor += epochs * steps * rows * 4 * (obs + 4)  # obs, actions, advantages, returns, old log-probs
    return {"rollout_flops": rollout, "update_flops": update, "floor_bytes": floor}


def _events_ms(fn: Any, repeats: int) -> float:
    """Median device milliseconds of ``fn()`` over ``repeats`` calls (CUDA events)."""
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def env_step_ms(t: Any, repeats: int) -> float:
    """``steps_per_iter`` env steps + resets of every env, captured like the rollout (median ms)."""
    try:
        from warp_drive.training.engine.cuda_graph import GraphedRollout
    except ImportError:  # an earlier tree (aeeede7, the baseline) kept it in training/ (by name: in this
        # tree that path is a moved-module alias, which the project's own code does not import)
        GraphedRollout = importlib.import_module("warp_drive.training.cuda_graph").GraphedRollout

    w = t.env_wrapper

    def steps() -> dict[str, torch.Tensor]:
        for _ in range(t.steps_per_iter):
            w.step_all_envs()
            w.reset_only_done_envs()
        return {}

    graphed = GraphedRollout(steps, w.cuda_function_manager) if t.graphed_rollout is not None else steps
    graphed()  # eager run, then the capture
    return _events_ms(graphed, repeats)


def top_kernels(t: Any, last: dict[str, Any], rows: int = 25) -> list[dict[str, Any]]:
    """The GPU kernels of one rollout + update by total time (torch.profiler), with their share."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t.update(t.generate_rollout())
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    total = sum(e.self_device_time_total for e in events) or 1.0
    events.sort(key=lambda e: -e.self_device_time_total)
    return [{"kernel": e.key[:110], "ms": e.self_device_time_total / 1000, "share": e.self_device_time_total / total,
             "calls": e.count} for e in events[:rows]]


def measure(env: str, overrides: list[str], tutorial: bool, iters: int, repeats: int,
            profile: bool = False) -> dict[str, Any]:
    t = make_trainer(env, [*overrides, "trainer.num_episodes=100000000", "trainer.seed=0"], tutorial=tutorial)
    start = time.perf_counter()
    t.train(2)  # warm-up: kernel builds, torch.compile, CUDA graph captures, allocator
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - start
    start = time.perf_counter()
    t.train(iters)
    torch.cuda.synchronize()
    iteration_ms = 1000 * (time.perf_counter() - start) / iters
    last: dict[str, Any] = {}

    def rollout() -> None:
        last["values"] = t.generate_rollout()

    rollout_ms = _events_ms(rollout, repeats)
    update_ms = _events_ms(lambda: (t.generate_rollout(), t.update(last["values"])), repeats) - rollout_ms
    for p in t.policies.values():
        if not all(torch.isfinite(q).all() for q in p.model.parameters()):
            raise RuntimeError(f"non-finite weights in policy {p.tag}")
    kernels = top_kernels(t, last) if profile else None
    env_ms = env_step_ms(t, repeats)
    work = work_per_iteration(t)
    batch = t.config.trainer.train_batch_size
    tflops, tbps = peaks(torch.cuda.get_device_name())
    it_s, up_s = iteration_ms / 1000, max(update_ms, 1e-6) / 1000
    out = {
        "num_envs": t.num_envs, "agents": t.env_wrapper.n_agents, "train_batch_size": batch,
        "warmup_s": warmup_s, "iteration_ms": iteration_ms, "env_steps_per_s": batch / it_s,
        "agent_steps_per_s": batch * t.env_wrapper.n_agents / it_s,
        "rollout_ms": rollout_ms, "env_step_ms": env_ms, "forward_sampling_ms": rollout_ms - env_ms, "update_ms": update_ms,
        **work,
        "iteration_tflops": (work["rollout_flops"] + work["update_flops"]) / it_s / 1e12,
        "update_tflops": work["update_flops"] / up_s / 1e12,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
    }
    if kernels is not None:
        out["top_kernels"] = kernels
    if tflops:
        out["bf16_peak_tflops"], out["memory_tbps"] = tflops, tbps
        out["iteration_peak_fraction"] = out["iteration_tflops"] / tflops
        out["update_peak_fraction"] = out["update_tflops"] / tflops
        out["memory_floor_ms"] = 1000 * work["floor_bytes"] / (tbps * 1e12)
        out["memory_floor_fraction"] = out["memory_floor_ms"] / iteration_ms
    del t
    torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--variants", nargs="*", default=["default"], choices=list(VARIANTS))
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--name", default="learner")
    ap.add_argument("--profile", action="store_true", help="also list the top GPU kernels of one iteration")
    args = ap.parse_args()
    results: dict[str, Any] = {}
    for name in args.configs:
        env, overrides, tutorial = CONFIGS[name]
        for variant in args.variants:
            key = f"{name}/{variant}"
            try:
                results[key] = measure(env, overrides + VARIANTS[variant], tutorial, args.iters, args.repeats,
                                       args.profile)
            except Exception as err:  # a variant the tree under test does not know: recorded, the rest runs
                results[key] = {"error": f"{type(err).__name__}: {err}"[:600]}
            r = results[key]
            if "error" in r:
                print(f"{key:34s} error: {r['error'][:160]}", flush=True)
                continue
            print(f"{key:34s} {r['iteration_ms']:8.1f} ms/it {r['env_steps_per_s'] / 1e3:9.1f} K env steps/s | "
                  f"env {r['env_step_ms']:6.1f} fwd+sample {r['forward_sampling_ms']:7.1f} update {r['update_ms']:7.1f} ms"
                  f" | update {r['update_tflops']:6.1f} TFLOP/s ({100 * r.get('update_peak_fraction', 0):4.1f}% of bf16 peak),"
                  f" floor {100 * r.get('memory_floor_fraction', 0):4.1f}%", flush=True)
            for k in r.get("top_kernels", []):
                print(f"    {100 * k['share']:5.1f}% {k['ms']:8.2f} ms {k['calls']:6d}x  {k['kernel']}", flush=True)
    write_results(args.name, {"iters": args.iters, "variants": {k: VARIANTS[k] for k in args.variants}, "results": results})


if __name__ == "__main__":
    main()
