"""cpu backend: torch's default thread count vs the one warp_drive chooses, on 2 cores beside a busy process.

Before issue 24 only ``--env`` runs on the cpu backend pinned torch's threads; every other path
(``--config``, ``--resume``, Lightning, ``examples/``, the notebooks, ``Trainer`` in Python) ran on
torch's default, one thread per core. Now :mod:`warp_drive.utils.cpu_threads` chooses when the env
wrapper is built. This benchmark trains the same config both ways, each in its own process, all
pinned to 2 cores (``os.sched_setaffinity``) with ``--busy`` busy-loop processes beside them:

* ``default`` (before): ``WARP_DRIVE_NUM_THREADS`` = torch's start-up count, what those paths ran with;
* ``chosen`` (after): nothing set; the library decides (the line it logs is recorded).

Each run builds the trainer, trains one warm-up iteration, then times ``--iters`` iterations.

Configs: ``cartpole``: CartPole at the CPU-sized settings of the issue's measurement (100 envs,
10,000 env steps per iteration); ``tag_continuous``: the example script's CPU-sized Tag (20 envs,
2 taggers + 10 runners, 2,000 env steps per iteration).

Usage::

    python benchmarks/bench_cpu_threads.py                         # cartpole, 1 busy process, 20 iterations
    python benchmarks/bench_cpu_threads.py --configs cartpole tag_continuous --busy 0 1

Writes ``benchmarks/results/cpu_threads[_<label>].json``: host, CPU model and count, torch version,
commit, and per config, busy-process count and setting: seconds, seconds per iteration, threads.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

#: CartPole at the CPU-sized settings of the issue's measurement (the example script's until 6869c75)
CARTPOLE = ["trainer.num_envs=100", "trainer.train_batch_size=10000", "trainer.num_episodes=100000"]
CONFIGS = ("cartpole", "tag_continuous")
QUIET_SAVING = ["saving.metrics_log_freq=100000", "saving.model_params_save_freq=100000",
                "saving.checkpoint_every_seconds=0"]
BUSY_LOOP = "while True: pass"


def overrides_of(name: str) -> list[str]:
    """The dotted overrides of ``name`` on top of its bundled config (run with ``--full_size``, so
    that the example script adds none of its own)."""
    from warp_drive.training.example_training_script import CPU_SIZED_OVERRIDES

    base = CARTPOLE if name == "cartpole" else [*CPU_SIZED_OVERRIDES[name], "trainer.num_episodes=100000"]
    return [*base, *QUIET_SAVING]


def child(name: str, iters: int) -> dict[str, Any]:
    """One timed run in this process (the parent set its environment and affinity)."""
    import torch

    from warp_drive.training import example_training_script as script

    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    log = logging.getLogger("warp_drive.utils.cpu_threads")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        args = script.parse_args(["--env", name, "--full_size", "--backend", "cpu", "--quiet",
                                  "--results_dir", str(Path(tmp) / "run"), *overrides_of(name)])
        trainer = script.build(args)
        trainer.train(1)
        warm = time.perf_counter() - start
        t0 = time.perf_counter()
        trainer.train(iters)
        seconds = time.perf_counter() - t0
        trainer.graceful_close()
    return {"threads": torch.get_num_threads(), "line": lines[-1] if lines else None, "seconds": seconds,
            "seconds_per_iteration": seconds / iters, "build_and_warmup_s": warm,
            "env_steps_per_iteration": trainer.config.trainer.train_batch_size,
            "agent_rows": trainer.env_wrapper.n_envs * trainer.env_wrapper.n_agents}


def run_child(name: str, iters: int, threads: int | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                            "WARP_DRIVE_NUM_THREADS")}
    if threads is not None:
        env["WARP_DRIVE_NUM_THREADS"] = str(threads)
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", name, "--iters", str(iters)],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> dict[str, Any]:
    import torch

    from common import cpu_model

    model = cpu_model()
    git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, cwd=HERE, check=False).stdout.strip()  # noqa: E731
    return {"host": platform.node(), "cpu_model": model, "logical_cpus": os.cpu_count(),
            "pinned_cpus": sorted(os.sched_getaffinity(0)), "torch": torch.__version__,
            "torch_start_threads": torch.get_num_interop_threads(), "python": platform.python_version(),
            "commit": os.environ.get("WARP_DRIVE_COMMIT") or git("rev-parse", "--short", "HEAD") or "unknown",
            "dirty_tracked_files": sorted(git("status", "--porcelain", "--untracked-files=no").splitlines()),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", default=["cartpole"], choices=sorted(CONFIGS))
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per run (after one warm-up)")
    ap.add_argument("--busy", type=int, nargs="+", default=[1], help="busy-loop processes beside the run (each value)")
    ap.add_argument("--cores", type=int, default=2, help="cores every process is pinned to")
    ap.add_argument("--label", default="", help="suffix of the results file name")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.iters)))
        return 0
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])  # children inherit it
    import torch

    default = torch.get_num_interop_threads()  # torch's start-up count on these cores
    results = []
    for name in args.configs:
        for busy in args.busy:
            loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(busy)]
            try:
                for setting, threads in (("default", default), ("chosen", None)):
                    load = os.getloadavg()
                    r = run_child(name, args.iters, threads)
                    r.update(config=name, overrides=overrides_of(name), busy_processes=busy, setting=setting,
                             load_average_before=load)
                    results.append(r)
                    print(f"{name}, {busy} busy: {setting:7s} {r['threads']} thread(s): {args.iters} iterations "
                          f"{r['seconds']:.1f} s ({r['seconds_per_iteration']:.3f} s each)", flush=True)
            finally:
                for p in loops:
                    p.kill()
                    p.wait()
    doc = {"benchmark": "cpu_threads", "machine": machine(), "iterations": args.iters, "results": results}
    path = HERE / "results" / (f"cpu_threads_{args.label}.json" if args.label else "cpu_threads.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
