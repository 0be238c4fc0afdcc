"""Tag settings side by side on a multi-GPU machine: each (candidate, seed) trains for 300 s on a GPU
of its own with ``learning_side_by_side.py ours`` (this project's chosen settings plus the
candidate's overrides) and is scored against the published 1e9-step policies, from the published
start state and from fresh starts; one JSON gathers every run and the mean and spread over seeds.

On the GPU machine (after ``source .device/setup.sh``)::

    python benchmarks/tag_sweep.py chosen runner-lr3e-4 --gpus 4 --seeds 1234 4321

Jobs beyond the GPU count wait for a free GPU (each takes about 6 minutes). Name ``chosen`` (no
override) among the candidates: compare candidates only with a baseline trained in the same run.
Result: ``learning_sweep_tag_<GPU>.json`` in benchmarks/results/ (or $WARP_DRIVE_BENCH_RESULTS)
and $OUT.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

#: Overrides on top of the chosen Tag settings (``learning_side_by_side.ours_config``). Round 5
#: (learning_sweep_round5_H200.json) found tagger entropy 0.01 best among 0-0.1; round 6 (round6 file)
#: found that fewer runner epochs (more env steps in the same time) lift the taggers: 1 epoch is now
#: chosen. Round 6 measured the lr and 250-env candidates against round 3's 4-epoch runners. No
#: candidate changes a model's shape: the scoring plays every snapshot against the published policies
#: in one trainer of their shape.
CANDIDATES: dict[str, list[str]] = {
    "chosen": [],
    # our runners outgrow the published ones (the published taggers tag 44% of ours, 78% of theirs):
    # slower runners keep the taggers' opponents nearer the published runners while the taggers learn
    "runner-lr3e-4": ["policy.runner.lr=0.0003"],
    "runner-lr1e-4": ["policy.runner.lr=0.0001"],
    "tagger-lr-decay": ["policy.tagger.lr=[[0, 0.001], [70000000, 0.0001]]"],  # round 5's G, at entropy 0.01
    "tagger-gamma0.99": ["policy.tagger.gamma=0.99"],  # pursuit pays off over a longer horizon
    "tagger-lr2e-3": ["policy.tagger.lr=0.002"],
    "tagger-lambda0.98": ["policy.tagger.gae_lambda=0.98"],  # less biased advantages for the sparse tag reward
    "tagger-vf1": ["policy.tagger.vf_loss_coeff=1.0"],  # the published taggers' value weight
    # round 6 (learning_sweep_round6_H200.json) made the runners' 1 epoch the default (chosen); these
    # measure the runners' epochs against it: round 3's 4 epochs (68 M env steps in 300 s) and 2 (104 M)
    "runner-4epochs": ["policy.runner.num_epochs=4"],
    "runner-2epochs": ["policy.runner.num_epochs=2"],
    "slow-runners": ["policy.runner.lr=0.0003", "policy.runner.num_epochs=2"],  # runner-lr3e-4 and runner-2epochs
    # round 3's 250 envs (twice the updates per env step) was launch-bound then; the captured update is not
    "250envs": ["trainer.num_envs=250", "trainer.train_batch_size=10000"],
}
SCORES = ("taggers_vs_published_runners", "published_taggers_vs_runners")


def plan(candidates: list[str], seeds: list[int]) -> list[tuple[str, int]]:
    unknown = sorted(set(candidates) - set(CANDIDATES))
    if unknown:
        raise SystemExit(f"unknown candidates {unknown}; choose from {', '.join(CANDIDATES)}")
    return [(c, s) for c in candidates for s in seeds]


def command(candidate: str, seed: int, budgets: list[int]) -> list[str]:
    overrides = [f"trainer.seed={seed}", *CANDIDATES[candidate]]
    return [sys.executable, str(HERE / "learning_side_by_side.py"), "ours", "--curve-every", str(min(60, min(budgets))),
            "--budgets", *map(str, budgets), *(a for o in overrides for a in ("--override", o))]


def summary(run: dict) -> dict:
    """One run.json as the scores that matter: the curve from the published start state, and the
    fresh-start scores at each budget."""
    return {"curve": [{"mark_s": c["mark_s"], "env_steps": c["env_steps"], **{k: c[k]["mean"] for k in SCORES}}
                      for c in run["curve"]],
            "fresh_starts": {b: {k: v[k]["mean"] for k in SCORES}
                             for b, v in run["versus_published_fresh_starts"].items()}}


def aggregate(runs: dict[str, dict[int, dict]], budget: int = 300) -> dict:
    """Mean and spread (sample std) over seeds of the last curve point and of the fresh starts at ``budget`` s."""
    out = {}
    for cand, by_seed in runs.items():
        rows = [r for r in by_seed.values() if r is not None]
        if not rows:
            continue
        stat = {}
        picks = {"published_start": lambda r: r["curve"][-1], "fresh": lambda r: r["fresh_starts"][str(budget)]}
        for where, pick in picks.items():
            for k in SCORES:
                x = np.array([pick(r)[k] for r in rows])
                stat[f"{where}:{k}"] = {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if len(x) > 1 else None}
        stat["env_steps"] = float(np.mean([r["curve"][-1]["env_steps"] for r in rows]))
        out[cand] = {"seeds": len(rows), **stat}
    return out


def gpu_ids(gpus: int) -> list[str]:
    """The devices the jobs go to: the first ``gpus`` of ``$CUDA_VISIBLE_DEVICES`` where it is set
    (a share of the machine), else 0 .. gpus - 1."""
    visible = [g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    if visible and gpus > len(visible):
        raise SystemExit(f"--gpus {gpus} but CUDA_VISIBLE_DEVICES names {len(visible)}: ask for at most {len(visible)}")
    return visible[:gpus] if visible else [str(i) for i in range(gpus)]


def run_jobs(jobs: list[tuple[str, int]], gpus: int, budgets: list[int], work: Path) -> dict[str, dict[int, dict]]:
    free, running, results = gpu_ids(gpus), {}, {}
    pending = list(jobs)
    while pending or running:
        while pending and free:
            cand, seed = pending.pop(0)
            gpu, folder = free.pop(0), work / f"{cand}@{seed}"
            folder.mkdir(parents=True, exist_ok=True)
            env = {k: v for k, v in os.environ.items() if k != "OUT"}
            env.update(CUDA_VISIBLE_DEVICES=gpu, WARP_DRIVE_BENCH_RESULTS=str(folder))
            log = open(folder / "log.txt", "w")
            running[(cand, seed)] = (gpu, log, subprocess.Popen(command(cand, seed, budgets), env=env, stdout=log,
                                                                stderr=subprocess.STDOUT, cwd=HERE.parent))
            print(f"{cand} seed {seed}: GPU {gpu}", flush=True)
        for key, (gpu, log, proc) in list(running.items()):
            if proc.poll() is None:
                continue
            log.close()
            del running[key]
            free.append(gpu)
            folder = work / f"{key[0]}@{key[1]}"
            run_json = folder / "side_by_side" / "ours" / "run.json"
            ok = proc.returncode == 0 and run_json.is_file()
            row = summary(json.loads(run_json.read_text())) if ok else None
            if not ok:
                tail = (folder / "log.txt").read_text()[-2000:]
                print(f"{key[0]} seed {key[1]} failed (exit {proc.returncode}):\n{tail}", flush=True)
            results.setdefault(key[0], {})[key[1]] = row
            print(f"{key[0]} seed {key[1]}: {json.dumps(row['curve'][-1]) if row else 'failed'}", flush=True)
        time.sleep(2)
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("candidates", nargs="+", help=f"some of: {', '.join(CANDIDATES)}")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs to spread the jobs over (one job each)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234], help="trainer seeds (each candidate runs each)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[120, 300],
                        help="snapshot seconds (default: 120 300)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    jobs = plan(args.candidates, args.seeds)
    runs = run_jobs(jobs, args.gpus, args.budgets, Path(tempfile.mkdtemp(prefix="tag_sweep_")))
    sys.path.insert(0, str(HERE))
    from common import write_results

    payload = {"what": __doc__.split("\n\n")[0].replace("\n", " "), "budgets_s": args.budgets, "seeds": args.seeds,
               "candidates": {c: CANDIDATES[c] for c in args.candidates},
               "runs": {c: {str(s): r for s, r in by_seed.items()} for c, by_seed in runs.items()},
               "over_seeds": aggregate(runs, max(args.budgets))}
    print(json.dumps(payload["over_seeds"], indent=1))
    results = os.environ.get("WARP_DRIVE_BENCH_RESULTS")
    print("written", write_results("learning_sweep_tag", payload, Path(results) if results else None))


if __name__ == "__main__":
    main()
