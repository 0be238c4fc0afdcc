"""Where the Tag continuous step-kernel time goes, on frozen states, replayed from a CUDA graph.

Two states per config: ``fresh`` (right after reset: every agent in the game, spread uniformly)
and ``mid`` (after 300 steps of random actions: agents crowd the walls and corners, many runners
are out). The state is frozen (speeds and accelerations zeroed, no-op actions), so every replay
steps the same positions and the timings of kernel variants compare like with like.

A variant is the real kernel source with one call removed (text substitution on a temporary copy):
``no_knn`` (empty neighbour lists), ``no_tags`` (no tag search), and ``batch2``/``batch1``
(candidates read 2 or 1 at a time instead of 4). ``no_*`` variants compute wrong results by
design; they are timed, never checked. (Removing the observation writes would let the compiler drop
the neighbour search too, so there is no such variant.)

Usage: ``python benchmarks/bench_env_phases.py [--grid 2000x1000] [--search grid,scan]
[--variants full,no_knn,no_tags] [--sides 0,16,24,32]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from bench_env_step import make
from common import write_results

KERNEL, NEIGHBOURS = "tag_continuous_step.cu", "tag_neighbours.cuh"
VARIANTS = {
    "full": [],
    "no_knn": [(KERNEL, "TagKNearestGrid(seeker, seeker_x, seeker_y, grid, list);", ";")],
    "no_tags": [(KERNEL, "const int tagger = kGridSide > 1", "const int tagger = true ? -1 : kGridSide > 1")],
    "batch2": [(NEIGHBOURS, "constexpr int kCandidateBatch = 4;", "constexpr int kCandidateBatch = 2;")],
    "batch1": [(NEIGHBOURS, "constexpr int kCandidateBatch = 4;", "constexpr int kCandidateBatch = 1;")],
}


def _constants_for_side(side: int):
    """cuda_constants() of a grid of at most `side` cells a side, chosen for a full field."""
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    def cuda_constants(self) -> dict:
        constants = TagContinuous.cuda_constants(self)
        constants.update(kNeighbourGridSide=side, kGridAgentsPerCell=self.num_agents / side**2 * 0.999)
        return constants

    return cuda_constants


def _patched_env_class(variant: str, side: int) -> type:
    """TagContinuous with the variant's sources and, when ``side`` > 0, that many grid cells a side."""
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    attrs = {} if side <= 0 else {"cuda_constants": _constants_for_side(side)}
    if not VARIANTS[variant]:
        return type(f"TagContinuous_side{side}", (TagContinuous,), attrs)
    folder = Path(tempfile.mkdtemp(prefix=f"tag_{variant}_"))
    for source in TagContinuous.cuda_source.parent.glob("*.cu*"):
        (folder / source.name).write_text(source.read_text())
    for name, old, new in VARIANTS[variant]:
        text = (folder / name).read_text()
        if old not in text:
            raise SystemExit(f"variant {variant}: {old!r} is not in {name} any more")
        (folder / name).write_text(text.replace(old, new))
    return type(f"TagContinuous_{variant}", (TagContinuous,), {"cuda_source": folder / KERNEL, **attrs})


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


def _freeze(w) -> None:
    """Zero speeds and accelerations, so that no-op actions leave every position in place."""
    dm = w.cuda_data_manager
    for name in ("speed", "acceleration"):
        dm.data_on_device_via_torch(name).zero_()
    dm.data_on_device_via_torch("sampled_actions").zero_()


def run(envs: int, agents: int, search: str, variant: str, side: int = 0) -> list[dict]:
    import example_envs.tag_continuous.tag_continuous as module

    original = module.TagContinuous
    module.TagContinuous = _patched_env_class(variant, side if search != "scan" else 0)
    try:
        w, step = make(envs, agents, search)
    finally:
        module.TagContinuous = original
    fm, dm = w.cuda_function_manager, w.cuda_data_manager
    rows = []
    for state, warmup in (("fresh", 0), ("mid", 300)):
        w.reset_all_envs()
        for _ in range(warmup):
            step()
        _freeze(w)
        w.step_all_envs()  # tags of this layout happen now; the replays then see a fixed state
        torch.cuda.synchronize()
        in_game = dm.data_on_device_via_torch("still_in_the_game").float().mean().item()
        rows.append({"envs": envs, "agents": agents, "neighbour_search": search,
                     "grid_side": w.env.cuda_constants()["kNeighbourGridSide"],
                     "variant": variant, "state": state,
                     "in_game_fraction": round(in_game, 3), "step_kernel_us": _graph_us(w.step_all_envs, fm)})
        if variant == "full":
            assert torch.isfinite(dm.data_on_device_via_torch("observations")).all()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default="2000x1000")
    ap.add_argument("--search", default="grid")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--sides", default="0", help="grid cells per side to try (0: the env's own choice)")
    args = ap.parse_args()
    rows = []
    for item in args.grid.split(","):
        envs, agents = (int(v) for v in item.split("x"))
        for search in args.search.split(","):
            for variant, side in ((v, int(c)) for v in args.variants.split(",") for c in args.sides.split(",")):
                try:
                    new = run(envs, agents, search, variant, side)
                except Exception as err:  # report and go on
                    new = [{"envs": envs, "agents": agents, "neighbour_search": search, "variant": variant,
                            "error": repr(err)[:300]}]
                rows.extend(new)
                for row in new:
                    print(json.dumps(row), flush=True)
    print("written", write_results("env_phases", {"rows": rows}))


if __name__ == "__main__":
    main()
