"""Issue 38 item 4, our half: the bundled simple_spread configs (IPPO, MAPPO) trained for a given number
of env steps per seed on the CPU, on our return scale and on JaxMARL's (docs/peers/jaxmarl_simple_spread.md).

Each seed trains ``warp_drive/training/run_configs/<algo>_simple_spread.yaml`` as committed (hyperparameters
unchanged) with ``trainer.seed`` and ``env.seed`` set to the seed and ``trainer.num_episodes`` set so that
the run is ``--env-steps // train_batch_size`` updates (2e6 steps: 976 updates of 2,048 = 1,998,848 env
steps, JaxMARL's MAPPO run exactly). The configs' learning rate is constant (1e-3, no annealing). It trains one update at a time and records, per update, the
trainer's logged ``<policy>/episode_return_mean``: the mean over the episodes that ended in that
update's rollout of the **per-agent mean** episode return (``EpisodeStats`` averages the rewards over
the policy's agents; the one shared policy holds all 3 agents). Final return: the mean over the last 5%
of updates, as the peer's.

JaxMARL's scale (the peer's ``returned_episode_returns``): the **sum over the 3 agents** of the episode
returns, episodes **26 steps** long. Converted here as ``3 x ours`` (``peer_scale_25``) and, for the extra
26th step, ``3 x ours x 26 / 25`` (``peer_scale_26``: the extra step's reward taken as the episode's mean
per-step reward) or ``3 x (ours + r_25)`` (``peer_scale_26_last_step``: the extra step taken as our 25th
step's mean reward over the last 5% of updates, from the per-step reward profile recorded there, since
JaxMARL's 26th step continues the same dynamics one step further).

Usage::

    python benchmarks/ours_simple_spread.py --algo ippo --seeds 1 2 3 --env-steps 2000000
    python benchmarks/ours_simple_spread.py --algo mappo --seeds 1 2 3 --env-steps 2000000
    python benchmarks/ours_simple_spread.py --merge benchmarks/results/ours_ippo_simple_spread_cpu.json benchmarks/results/ours_mappo_simple_spread_cpu.json
    nice python benchmarks/ours_simple_spread.py --algo mappo_gru --seeds 1 --env-steps 300000 --threads 2

``mappo_gru`` / ``ippo_gru``: the recurrent configs (``<algo>_simple_spread.yaml``, GRU actor and critic).

Results: ``benchmarks/results/ours_<algo>_simple_spread_cpu.json`` per algo; ``--merge`` writes
``benchmarks/results/ours_simple_spread_cpu.json`` (both algos, with the peer's finals for comparison).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import commit, cpu_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV = "mpe_simple_spread"
NUM_AGENTS = 3
PEER_EPISODE_STEPS, OUR_EPISODE_STEPS = 26, 25
PEER_FILES = {"ippo": "jaxmarl_ippo_ff_simple_spread_cpu.json", "mappo": "jaxmarl_mappo_rnn_simple_spread_cpu.json",
              "mappo_gru": "jaxmarl_mappo_rnn_simple_spread_cpu.json", "ippo_gru": "jaxmarl_ippo_ff_simple_spread_cpu.json"}


def to_peer(ours: float, steps26: bool = False) -> float:
    """Our per-agent mean episode return (25 steps) on JaxMARL's scale (sum over the 3 agents; ``steps26``:
    plus one more step at the episode's mean per-step reward)."""
    return ours * NUM_AGENTS * (PEER_EPISODE_STEPS / OUR_EPISODE_STEPS if steps26 else 1.0)


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def train_seed(algo: str, seed: int, env_steps: int, basedir: str) -> dict[str, Any]:
    from warp_drive.cli.setup_and_train import run_config_path
    from warp_drive.config import load_run_config
    from warp_drive.training.run.build import build_trainer
    from warp_drive.training.setup_and_train import env_class_for

    probe = load_run_config(run_config_path(f"{algo}_simple_spread"))
    batch = probe.trainer.train_batch_size
    length = probe.env["episode_length"]
    updates = env_steps // batch
    episodes = -(-updates * batch // length)  # enough episodes for `updates` iterations
    config = load_run_config(run_config_path(f"{algo}_simple_spread"), [
        f"trainer.seed={seed}", f"env.seed={seed}", "trainer.env_backend=cpu", f"trainer.num_episodes={episodes}",
        f"saving.basedir={basedir}", "saving.metrics_log_freq=1", "saving.model_params_save_freq=100000000",
        "saving.checkpoint_every_seconds=0"])
    trainer = build_trainer(config, env_class_for(ENV), backend="cpu", results_dir=f"{basedir}/{algo}_{seed}",
                            verbose=False)
    tag = next(iter(config.policy))
    returns: list[float] = []
    lengths: list[float] = []
    tail = max(1, int(round(0.05 * updates)))
    profile = np.zeros(length)  # summed reward (mean over envs and agents) per step of the episode, last 5%
    profile_n = np.zeros(length)
    rollout_steps = batch // config.trainer.num_envs
    start = time.perf_counter()
    for i in range(updates):
        m = trainer.train(1)
        if i >= updates - tail:  # episodes are fixed-length and start together: step index = global step mod length
            shared = trainer.engine.rollout.shared
            r_t = shared.rewards.float().mean(dim=(1, 2)).cpu().numpy()
            idx = (i * rollout_steps + np.arange(rollout_steps)) % length
            done_rows = shared.done.cpu().numpy().astype(bool).all(axis=1)
            assert np.array_equal(done_rows, idx == length - 1), "episodes not aligned"
            np.add.at(profile, idx, r_t)
            np.add.at(profile_n, idx, 1)
        returns.append(float(m[f"{tag}/episode_return_mean"]))
        lengths.append(float(m.get(f"{tag}/episode_length_mean", float("nan"))))
        if (i + 1) % 100 == 0:
            print(f"{algo} seed {seed}: update {i + 1}/{updates}, {time.perf_counter() - start:.0f} s, "
                  f"return {np.nanmean(returns[-20:]):.2f}", flush=True)
    seconds = time.perf_counter() - start
    r = np.asarray(returns)
    per_step = profile / np.maximum(profile_n, 1)
    final = float(np.nanmean(r[-tail:]))
    bins = np.array_split(np.arange(updates), min(200, updates))  # at most 200 points, as the peer's JSON
    curve = [[int((b[-1] + 1) * batch), round(float(np.nanmean(r[b])), 4)] for b in bins]
    return {"seed": seed, "updates": updates, "env_steps": updates * batch, "seconds": round(seconds, 1),
            "final_ours": round(final, 3), "final_peer_scale_25": round(to_peer(final), 3),
            "final_peer_scale_26": round(to_peer(final, True), 3), "final_tail_updates": tail,
            "episode_length_last": lengths[-1],
            "per_step_reward_last5pct_ours": [round(float(x), 4) for x in per_step],
            "final_peer_scale_26_last_step": round(NUM_AGENTS * (final + float(per_step[-1])), 3),
            "curve_ours": curve, "per_update_return_ours": [round(x, 4) for x in returns]}


def run(args: argparse.Namespace) -> Path:
    torch.set_num_threads(args.threads)
    before = loadavg()
    began = time.time()
    seeds = []
    with tempfile.TemporaryDirectory() as basedir:
        for seed in args.seeds:
            seeds.append(train_seed(args.algo, seed, args.env_steps, basedir))
            s = seeds[-1]
            print(f"{args.algo} seed {seed}: final {s['final_ours']:.3f} (peer scale {s['final_peer_scale_25']:.2f} / "
                  f"{s['final_peer_scale_26']:.2f}), {s['seconds']} s", flush=True)
    finals = [s["final_ours"] for s in seeds]
    doc = {
        "benchmark": "ours_simple_spread", "algo": args.algo, "env": ENV,
        "config": f"warp_drive/training/run_configs/{args.algo}_simple_spread.yaml (as committed; seeds, "
                  f"num_episodes and logging overridden)",
        "commit": commit(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began)),
        "machine": {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "torch_threads": args.threads,
                    "torch": torch.__version__, "python": platform.python_version(),
                    "loadavg_before": before, "loadavg_after": loadavg()},
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
        "env_steps_requested": args.env_steps,
        "return_scale": {
            "ours": "per-agent mean episode return (mean over the 3 agents of the shared policy), 25-step episodes",
            "peer_scale_25": "3 x ours: sum over the 3 agents, 25 steps",
            "peer_scale_26": "3 x ours x 26/25: sum over agents, one more step at the mean per-step reward (JaxMARL's 26-step episodes)",
        },
        "final": "mean over the last 5% of updates of the per-update episode return",
        "seeds": seeds,
        "mean_final_ours": round(float(np.mean(finals)), 3),
        "mean_final_peer_scale_25": round(to_peer(float(np.mean(finals))), 3),
        "mean_final_peer_scale_26": round(to_peer(float(np.mean(finals)), True), 3),
        "seconds_total": round(sum(s["seconds"] for s in seeds), 1),
    }
    out = Path(args.out or RESULTS / f"ours_{args.algo}_simple_spread_cpu.json")
    out.write_text(json.dumps(doc, indent=1))
    return out


def first_reach(returns: list[float], last_step: float, target: float, window: int, batch: int) -> int | None:
    """Env steps at the first update where the trailing mean over ``window`` updates, on the peer's scale
    (``3 x (ours + last_step)``), is at least ``target``; None if never."""
    r = np.asarray(returns, dtype=np.float64)
    for i in range(window - 1, len(r)):
        if NUM_AGENTS * (np.nanmean(r[i - window + 1 : i + 1]) + last_step) >= target:
            return (i + 1) * batch
    return None


def merge(files: list[str], out: str | None) -> Path:
    """Both algos' files in one, each beside the peer's committed figures (its ``final_return_mean``)."""
    runs = [json.loads(Path(f).read_text()) for f in files]
    rows = []
    for f, d in zip(files, runs):
        peer = json.loads((RESULTS / PEER_FILES[d["algo"]]).read_text())
        target = float(peer["final_return_mean"])
        per_seed = []
        for s in d["seeds"]:
            batch = s["env_steps"] // s["updates"]
            last = s["per_step_reward_last5pct_ours"][-1]
            per_seed.append({"seed": s["seed"], "final_ours": s["final_ours"], "final_peer_scale_25": s["final_peer_scale_25"],
                             "final_peer_scale_26_last_step": s["final_peer_scale_26_last_step"],
                             "final_peer_scale_26": s["final_peer_scale_26"], "seconds": s["seconds"],
                             "env_steps_to_peer_final": first_reach(s["per_update_return_ours"], last, target,
                                                                    s["final_tail_updates"], batch)})
        mean = lambda k: round(float(np.mean([x[k] for x in per_seed])), 3)  # noqa: E731
        s0 = d["seeds"][0]
        mean_curve = np.mean([s["per_update_return_ours"] for s in d["seeds"]], axis=0).tolist()
        mean_last = float(np.mean([s["per_step_reward_last5pct_ours"][-1] for s in d["seeds"]]))
        mean_reach = first_reach(mean_curve, mean_last, target, s0["final_tail_updates"], s0["env_steps"] // s0["updates"])
        rows.append({"algo": d["algo"], "file": Path(f).name, "ours_env_steps": d["seeds"][0]["env_steps"],
                     "ours_mean_final_ours": mean("final_ours"), "ours_mean_final_peer_scale_25": mean("final_peer_scale_25"),
                     "ours_mean_final_peer_scale_26_last_step": mean("final_peer_scale_26_last_step"),
                     "ours_mean_final_peer_scale_26": mean("final_peer_scale_26"), "ours_seconds": d["seconds_total"],
                     "ours_per_seed": per_seed, "ours_seed_mean_env_steps_to_peer_final": mean_reach, "peer_file": PEER_FILES[d["algo"]], "peer_script": peer["peer"]["script"],
                     "peer_env_steps": peer["env_steps"]["total"], "peer_final_per_seed": peer["final_return_per_seed"],
                     "peer_final_mean": target, "peer_seconds": peer["wall_clock"]["total_s"],
                     "ours_reaches_peer_final": mean("final_peer_scale_26_last_step") >= target})
    doc = {"benchmark": "ours_simple_spread", "command": " ".join(["python", *sys.argv]),
           "env_steps_to_peer_final": "first update where the trailing mean over the last-5% window, on the peer's "
                                      "scale (3 x (ours + 25th-step reward)), reaches the peer's mean final",
           "comparison": rows, "runs": runs}
    path = Path(out or RESULTS / "ours_simple_spread_cpu.json")
    path.write_text(json.dumps(doc, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algo", choices=tuple(PEER_FILES), default="ippo")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--env-steps", type=float, default=2e6)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: two algos side by side on 2 cores)")
    p.add_argument("--out")
    p.add_argument("--merge", nargs="+", metavar="JSON")
    args = p.parse_args(argv)
    if args.merge:
        print(merge(args.merge, args.out))
        return 0
    args.env_steps = int(args.env_steps)
    print(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
