"""Where the env-step time goes (Tag continuous): sampler, step kernel and reset timed apart, and
step-kernel variants with one stage left out, each replayed from a CUDA graph.

A variant is the real kernel source with one call removed (text substitution on a temporary copy),
so differences between variants attribute the step time to its stages without counters:
``no_knn`` (no neighbour search: empty lists), ``no_obs`` (no observation writes), ``no_tags``
(no tag search). Variants compute wrong results by design; they are timed, never checked.

Usage: ``python benchmarks/bench_env_phases.py [--grid 2000x1000] [--search grid,scan]
[--variants full,no_knn,no_obs,no_tags]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from bench_env_step import make
from common import write_results

VARIANTS = {
    "full": [],
    "no_knn": [("TagKNearestGrid(agent, view, grid, list);", ";"), ("TagKNearestScan(agent, view, list);", ";")],
    "no_obs": [("TagWriteWarpObservations(env, sh_neighbours, view, observations_arr, pos_norm, max_speed, time_frac);", ";")],
    "no_tags": [("const int tagger = kGridSearch", "const int tagger = true ? -1 : kGridSearch")],
}


def _patched_env_class(variant: str) -> type:
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    if not VARIANTS[variant]:
        return TagContinuous
    text = TagContinuous.cuda_source.read_text()
    for old, new in VARIANTS[variant]:
        if old not in text:
            raise SystemExit(f"variant {variant}: {old!r} is not in the kernel source any more")
        text = text.replace(old, new)
    path = Path(tempfile.mkdtemp(prefix=f"tag_{variant}_")) / "tag_continuous_step.cu"
    path.write_text(text)
    return type(f"TagContinuous_{variant}", (TagContinuous,), {"cuda_source": path})


def _graph_us(fn, fm, reps: int = 20, per_graph: int = 10) -> float:
    """Microseconds per call of ``fn`` replayed from a CUDA graph (kernels launched on ``fm``'s stream)."""
    import pycuda.driver as cuda

    stream = cuda.Stream()
    fm.stream = stream
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=torch.cuda.ExternalStream(stream.handle)):
        for _ in range(per_graph):
            fn()
    fm.stream = None
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    return 1000 * a.elapsed_time(b) / (reps * per_graph)


def run(envs: int, agents: int, search: str, variant: str) -> dict:
    import example_envs.tag_continuous.tag_continuous as module

    original = module.TagContinuous
    module.TagContinuous = _patched_env_class(variant)
    try:
        w, step = make(envs, agents, search)
    finally:
        module.TagContinuous = original
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    fm = w.cuda_function_manager
    row = {"envs": envs, "agents": agents, "neighbour_search": search, "variant": variant}
    for key, fn in (("env_step_us", step), ("step_kernel_us", w.step_all_envs), ("reset_us", w.reset_only_done_envs)):
        row[key] = _graph_us(fn, fm)
    row["sampler_us"] = row["env_step_us"] - row["step_kernel_us"] - row["reset_us"]
    if variant == "full":
        assert torch.isfinite(w.cuda_data_manager.data_on_device_via_torch("observations")).all()
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default="2000x1000")
    ap.add_argument("--search", default="grid")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    rows = []
    for item in args.grid.split(","):
        envs, agents = (int(v) for v in item.split("x"))
        for search in args.search.split(","):
            for variant in args.variants.split(","):
                try:
                    row = run(envs, agents, search, variant)
                except Exception as err:  # report and go on
                    row = {"envs": envs, "agents": agents, "neighbour_search": search, "variant": variant,
                           "error": repr(err)[:300]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("written", write_results("env_phases", {"rows": rows}))


if __name__ == "__main__":
    main()
