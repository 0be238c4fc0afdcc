"""Env step alone (in-kernel sampling of both action heads + step kernel + reset of done envs).

Both heads are sampled in one launch (``Sampler.sample_heads``, as the trainer does; before commit
c8a85d9 this benchmark launched the sampler once per head).

Tag continuous (partial observation, K = 10), over a grid of envs x agents, launched eagerly and
replayed from a CUDA graph. Each config checks its work (timesteps advanced, observations finite).
Usage: ``python benchmarks/bench_env_step.py [--steps 200] [--grid 2000x1000,100x110] [--tag before]
[--search grid,scan]``.
Keep the default grid stable across merges; ``--grid`` runs a subset, and ``--tag`` names the results file
(``env_step_<tag>_<gpu>.json``) so a subset never overwrites the full table.
"""

from __future__ import annotations

import argparse
import json

import torch

from common import write_results

GRID = [(100, 110), (500, 110), (1000, 110), (2000, 110), (10000, 110), (1000, 22), (1000, 55), (1000, 220), (1000, 500),
        (1000, 1000), (200, 1000), (2000, 1000), (1, 5000)]


def make(envs: int, agents: int, search: str = "auto"):
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.services.sampler import Sampler

    taggers = max(1, agents // 11)
    env = TagContinuous(num_taggers=taggers, num_runners=agents - taggers, grid_length=20.0 * (agents / 110) ** 0.5,
                        episode_length=500, max_acceleration=0.1, min_acceleration=-0.1, max_turn=2.356, min_turn=-2.356,
                        num_acceleration_levels=20, num_turn_levels=20, use_full_observation=False,
                        num_other_agents_observed=10, tagging_distance=0.02, tag_reward_for_tagger=10.0,
                        tag_penalty_for_runner=-10.0, seed=1, neighbour_search=search)
    w = EnvWrapper(env, num_envs=envs, env_backend="pycuda")
    w.reset_all_envs()
    s = Sampler(w.cuda_function_manager)
    s.init_random(0)
    s.register_actions(w.cuda_data_manager, "sampled_actions", 21)
    # one tensor per head, as a policy's heads are (one tensor read twice would hit the cache)
    heads = [torch.full((envs, agents, 21), 1 / 21, device="cuda") for _ in range(2)]
    dm = w.cuda_data_manager

    def step() -> None:
        s.sample_heads(dm, heads, "sampled_actions")
        w.step_all_envs()
        w.reset_only_done_envs()

    return w, step


def run(envs: int, agents: int, steps: int, search: str = "auto") -> dict:
    import pycuda.driver as cuda

    w, step = make(envs, agents, search)
    dm = w.cuda_data_manager
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = dm.data_on_device_via_torch("_timestep_").clone()
    a.record()
    for _ in range(steps):
        step()
    b.record()
    torch.cuda.synchronize()
    eager_s = a.elapsed_time(b) / 1000
    now = dm.data_on_device_via_torch("_timestep_")
    advanced = now - t0
    # every env advanced exactly `steps` steps, or finished an episode and restarted within them
    assert bool(((advanced == steps) | (now < steps)).all()), "envs did not advance as expected"
    assert torch.isfinite(dm.data_on_device_via_torch("observations")).all()
    stream = cuda.Stream()
    g = torch.cuda.CUDAGraph()
    w.cuda_function_manager.stream = stream
    per_graph = 10
    with torch.cuda.graph(g, stream=torch.cuda.ExternalStream(stream.handle)):
        for _ in range(per_graph):
            step()
    w.cuda_function_manager.stream = None
    g.replay()
    torch.cuda.synchronize()
    reps = max(1, steps // per_graph)
    a.record()
    for _ in range(reps):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    graph_s = a.elapsed_time(b) / 1000
    n = reps * per_graph
    return {"envs": envs, "agents": agents, "neighbour_search": search,
            "grid_side": w.env.neighbour_grid_side, "eager_env_steps_per_s": envs * steps / eager_s,
            "graph_env_steps_per_s": envs * n / graph_s, "graph_agent_steps_per_s": envs * agents * n / graph_s,
            "graph_us_per_step": 1e6 * graph_s / n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--grid", default="", help="comma-separated ENVSxAGENTS subset, e.g. 2000x1000,100x110")
    ap.add_argument("--tag", default="", help="suffix of the results file name")
    ap.add_argument("--search", default="auto", help="neighbour_search of Tag continuous; comma-separated to compare")
    args = ap.parse_args()
    grid = [tuple(int(v) for v in item.split("x")) for item in args.grid.split(",") if item] or GRID
    rows = []
    for envs, agents in grid:
        for search in args.search.split(","):
            try:
                r = run(envs, agents, args.steps, search)
            except Exception as err:  # report and continue with the grid
                r = {"envs": envs, "agents": agents, "neighbour_search": search, "error": repr(err)[:300]}
            rows.append(r)
            print(json.dumps(r), flush=True)
    name = f"env_step_{args.tag}" if args.tag else "env_step"
    print("written", write_results(name, {"rows": rows, "steps": args.steps}))


if __name__ == "__main__":
    main()
