"""Does the first run learn every time? The README's two commands over many seeds, on the CPU.

Runs ``python -m warp_drive.training.example_training_script --env <env> --backend cpu`` (the CPU-sized
settings, exactly as a user without a GPU gets them) once per seed, ``trainer.seed`` = ``env.seed`` =
the seed, plus ``--unseeded N`` runs without any seed override (as a user runs it), each under
``/usr/bin/time -v`` for its wall clock and peak resident memory, and reads the summary it prints:

* Tag continuous (``tag_continuous``): passes when the verdict says every policy is better than uniform
  random: paired over the same fresh-start episodes (same start states, same uniform-random opponents'
  draws), each team's 95% interval of the mean per-episode return difference trained − random lies
  above 0; records both teams' trained and random returns, the paired difference, the periodic
  evaluation's first and last return against random opponents (the ``learning`` line), and each team's
  return with the run's initial and final weights over the same episodes (the ``learned`` line).
* CartPole (``cartpole``): passes when the final greedy return is >= 475 (``--threshold``) and the
  verdict is better than random; records the keep-best line (which weights the final policy holds).

Usage::

    # the committed figures (benchmarks/results/first_run_cpu.json): 10 seeds and 2 unseeded runs each
    python benchmarks/first_run_seeds.py --seeds 1 2 3 4 5 6 7 8 9 10 --unseeded 2
    # held out from the choice of the CPU-sized settings (benchmarks/results/first_run_cpu_heldout.json)
    python benchmarks/first_run_seeds.py --envs tag_continuous --seeds 11 12 13 14 15 16 17 18 19 20 --unseeded 0
    # a quick look, or candidate settings (dotted overrides on top of the CPU-sized ones), 4 at a time
    python benchmarks/first_run_seeds.py --envs tag_continuous --seeds 1 2 3 --set policy.tagger.lr=0.003 --jobs 4

Runs go one at a time by default (``--jobs``: several at once, on a machine with idle cores); the
load average is recorded before and after. Results: JSON (commit, CPU, per-run verdicts and figures,
wall clock, peak memory) to ``--out`` (default ``benchmarks/results/first_run_cpu.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
SCRIPT = "warp_drive.training.example_training_script"
#: the greedy return CartPole must reach (gymnasium's CartPole-v1 "solved")
CARTPOLE_THRESHOLD = 475.0
_NUM = r"(-?[\d.]+(?:e[-+]?\d+)?)"
_CELL = rf"{_NUM} ± {_NUM}\s+\[{_NUM}, {_NUM}\]"


def parse_summary(stdout: str) -> dict[str, Any]:
    """The figures of the summary a run printed: per policy the trained and random intervals against
    uniform-random opponents and the paired difference trained − random (each ``{"mean", "half_width",
    "low", "high"}``), ``better``, the verdict line, the learning lines and the keep-best line."""
    out: dict[str, Any] = {"policies": {}}
    for line in stdout.splitlines():
        m = re.match(rf"^(\S+)\s+(?:random\s+)?{_CELL}\s+{_CELL}\s+(?:{_CELL}\s+)?(\d+) / (\d+)\s+(yes|no)$",
                     line.strip())
        if m and m.group(1) not in ("trained", "trained*"):
            g = m.groups()
            cell = lambda i: {"mean": float(g[i]), "half_width": float(g[i + 1]), "low": float(g[i + 2]),  # noqa: E731
                              "high": float(g[i + 3])}
            out["policies"][g[0]] = {"trained": cell(1), "random": cell(5), "episodes": int(g[13]),
                                     "better": g[15] == "yes"}
            if g[9] is not None:
                out["policies"][g[0]]["difference"] = cell(9)
        elif line.startswith("verdict: "):
            out["verdict"] = line[len("verdict: "):]
        elif line.startswith(("learning", "training: ", "learned (")):
            out.setdefault("learning", []).append(line)
        elif line.startswith("final policy (keep_best"):
            out["keep_best"] = line
        elif line.startswith("done: "):
            out["done"] = line
    for line in out.get("learning", []):  # "<tag> A (iteration i) -> B (iteration j)" of the periodic evaluation
        if line.startswith("learning (") and ("uniform-random opponents" in line or "greedy evaluation" in line):
            for tag, first, last in re.findall(rf"(\S+) {_NUM} \(iteration \d+\) -> {_NUM} \(iteration \d+\)", line):
                out["policies"].setdefault(tag, {})["eval_first_last"] = [float(first), float(last)]
        elif line.startswith("learned ("):  # "<tag> A -> B (+D ± H)": initial -> final weights, same episodes
            for tag, start, final, diff, half in re.findall(rf"(\S+) {_NUM} -> {_NUM} \(\+?{_NUM} ± {_NUM}\)", line):
                out["policies"].setdefault(tag, {})["learned"] = {"start": float(start), "final": float(final),
                                                                  "difference": float(diff), "half_width": float(half)}
    return out


def passes(env: str, summary: dict[str, Any], threshold: float) -> bool:
    """Tag: every policy better than random (the verdict); CartPole: also a final greedy mean >= ``threshold``."""
    verdict = summary.get("verdict", "")
    ok = verdict.startswith(("every policy is better", "the trained policy is better"))
    if env == "cartpole":
        ok = ok and all(p.get("trained", {}).get("mean", -1e9) >= threshold for p in summary["policies"].values())
    return ok and bool(summary["policies"])


def run_one(env: str, seed: int | None, overrides: list[str], workdir: Path, threshold: float) -> dict[str, Any]:
    """One run of the command (CPU backend), timed by ``/usr/bin/time -v``."""
    seeds = [] if seed is None else [f"trainer.seed={seed}", f"env.seed={seed}"]
    folder = workdir / f"{env}_{'unseeded' if seed is None else seed}_{time.time_ns()}"
    argv = [sys.executable, "-m", SCRIPT, "--env", env, "--backend", "cpu", "--results_dir", str(folder),
            *seeds, *overrides]
    timed = ["/usr/bin/time", "-v", *argv] if Path("/usr/bin/time").exists() else argv
    start = time.perf_counter()
    proc = subprocess.run(timed, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    summary = parse_summary(proc.stdout)
    done = re.search(r"in ([\d.]+) s \(", summary.get("done", ""))
    return {"env": env, "seed": seed, "returncode": proc.returncode, "passed": proc.returncode == 0
            and passes(env, summary, threshold), "wall_s": round(wall, 1),
            "training_s": float(done.group(1)) if done else None,
            "peak_rss_mb": round(int(rss.group(1)) / 1024, 1) if rss else None, **summary,
            **({"stderr_tail": proc.stderr[-1500:]} if proc.returncode else {})}


def machine() -> dict[str, Any]:
    from common import commit, cpu_model

    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout.strip()
    import torch

    return {"commit": commit() + ("+uncommitted changes" if dirty else ""), "cpu": cpu_model(),
            "cores": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "torch": torch.__version__, "host": platform.node(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", nargs="+", default=["tag_continuous", "cartpole"])
    p.add_argument("--seeds", nargs="*", type=int, default=list(range(1, 11)))
    p.add_argument("--unseeded", type=int, default=1, help="runs without a seed override, per env")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="extra dotted overrides (candidates)")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (default 1: the machine may be shared)")
    p.add_argument("--threshold", type=float, default=CARTPOLE_THRESHOLD)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "first_run_cpu.json"))
    args = p.parse_args(argv)
    runs = [(env, seed) for seed in [*args.seeds, *[None] * args.unseeded] for env in args.envs]  # seeds interleaved
    info = {**machine(), "load_average_before": os.getloadavg(), "jobs": args.jobs, "overrides": args.set}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="first_run_") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_one, env, seed, args.set, Path(tmp), args.threshold) for env, seed in runs]
        for fut in futures:
            res = fut.result()
            results.append(res)
            figures = "; ".join(f"{tag} {pol['trained']['mean']:.4g} ± {pol['trained']['half_width']:.3g} vs random "
                                f"{pol['random']['mean']:.4g} ± {pol['random']['half_width']:.3g}"
                                + (f", paired difference {pol['difference']['mean']:.4g} ± "
                                   f"{pol['difference']['half_width']:.3g}" if "difference" in pol else "")
                                for tag, pol in res["policies"].items() if "trained" in pol)
            print(f"{res['env']} seed {res['seed']}: {'PASS' if res['passed'] else 'FAIL'} | {figures} | "
                  f"{res['wall_s']} s, {res['peak_rss_mb']} MB", flush=True)
            _write(args.out, info, results, args.envs)  # after every run: a cut-off session keeps what finished
    _write(args.out, {**info, "load_average_after": os.getloadavg()}, results, args.envs)
    return 0


def _write(path: str, info: dict[str, Any], results: list[dict[str, Any]], envs: list[str]) -> None:
    summary = {}
    for env in envs:
        mine = [r for r in results if r["env"] == env]
        if mine:
            walls = [r["wall_s"] for r in mine]
            rss = [r["peak_rss_mb"] for r in mine if r["peak_rss_mb"] is not None]
            summary[env] = {"passed": sum(r["passed"] for r in mine), "runs": len(mine),
                            "seeded_passed": sum(r["passed"] for r in mine if r["seed"] is not None),
                            "wall_s": {"mean": round(sum(walls) / len(walls), 1), "max": max(walls)},
                            "peak_rss_mb": {"max": max(rss)} if rss else None}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"benchmark": "first_run_seeds", "machine": info, "summary": summary,
                                      "runs": results}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
