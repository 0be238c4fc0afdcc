"""CPU backend against its compute floor: one training iteration vs its own policy FLOPs.

One iteration (rollout of ``B = train_batch_size / num_envs`` steps per env, then the update) of
Tag continuous on the cpu backend, timed after one warm-up iteration, is compared with its floor:

* **time floor** = the iteration's policy matmul FLOPs (every rollout forward, and the update's
  forward and backward over ``num_epochs`` passes of the batch; counted from the ``nn.Linear``
  sizes of each policy's model and the batch) divided by this machine's torch float32 matmul rate,
  measured here with ``F.linear`` on the models' own layer shapes (the fastest of 1,024, 4,096 and
  16,384 rows, before and after the timed iterations: the strictest floor);
* **memory floor** = the bytes of the rollout buffers (every policy's :class:`RolloutBuffers` plus
  the shared per-step done/timestep/reward arrays).

Peak memory is the process's resident-set high-water mark (``VmHWM``, reset with
``/proc/self/clear_refs`` before building the trainer) minus the resident set before it (torch and
NumPy loaded): what building the trainer, the warm-up and the timed iteration added. Each config
runs in its own subprocess, so one config's memory does not count against another's.

Targets (issue 14, item 2): iteration time within 2x of the time floor; peak memory within 2x of
the rollout buffers. On a machine shared with other jobs the wall-clock ratio moves with their
load (recorded, with the load average); ``cpu_time_ratio`` (the iteration's process CPU time over
floor x threads) does not count time the process waited for a core. With ``--threads 1`` it is
the contention-free version of the time ratio.

The rollout runs as the trainer runs it: on two or more torch threads, in env parts, one thread
each (:mod:`warp_drive.training.engine.cpu_pipeline`); ``--rollout plain`` turns the env's opt-in off
for the plain loop (to compare). Each entry records which one ran (``rollout_mode``).

Usage::

    python benchmarks/bench_cpu_floor.py                     # the small config (< 1 min)
    python benchmarks/bench_cpu_floor.py --configs small tutorial
    python benchmarks/bench_cpu_floor.py --label before      # results/cpu_floor_before.json
    python benchmarks/bench_cpu_floor.py --out /tmp/x.json   # anywhere else

Writes ``benchmarks/results/cpu_floor[_<label>].json`` (or ``--out``) with the machine (CPU model,
cores, torch version and threads, load average), the commit and one entry per config.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

#: name -> (dotted overrides of example_envs/tag_continuous/run_config.yaml, description)
CONFIGS: dict[str, tuple[list[str], str]] = {
    "small": (["trainer.num_envs=100", "trainer.train_batch_size=2500"],
              "tutorial env and model (10 taggers + 100 runners, FC 256x256, A2C), 100 envs, 25 steps per env"),
    "tutorial": (["trainer.num_envs=100", "trainer.train_batch_size=25000"],
                 "the tutorial config: 100 envs, batch 25,000 (250 steps per env)"),
}
#: Rows of the GEMMs that measure the matmul rate (the trainer's cpu chunks are 4,096 agent-samples);
#: the fastest is the floor's rate.
GEMM_ROWS = (1024, 4096, 16384)


# ---------------------------------------------------------------------------------- machine
def _status_mib(key: str) -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def machine_info() -> dict[str, Any]:
    import numpy as np
    import torch

    from common import cpu_model

    model = cpu_model()
    try:
        if os.environ.get("WARP_DRIVE_COMMIT"):  # a tree measured without its .git
            raise OSError
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=HERE, check=False).stdout.strip() or "unknown"
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                    text=True, cwd=HERE, check=False).stdout.strip())
    except OSError:
        commit, dirty = os.environ.get("WARP_DRIVE_COMMIT", "unknown"), False
    return {
        "cpu_model": model,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_blas": "mkl" if torch.backends.mkl.is_available() else "other",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "commit": commit + ("+dirty" if dirty else ""),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


# ---------------------------------------------------------------------------------- floors
def linear_shapes(model: Any) -> list[tuple[int, int]]:
    """(in_features, out_features) of every ``nn.Linear`` of a model, in module order."""
    from torch import nn

    return [(m.in_features, m.out_features) for m in model.modules() if isinstance(m, nn.Linear)]


def policy_flops(trainer: Any) -> dict[str, Any]:
    """Matmul FLOPs of one iteration, per policy and in total (2 FLOPs per multiply-add).

    Per sample (one agent at one step), with ``F = sum(in * out)`` over the model's linear layers
    and ``F0`` the first layer's share: forward ``2F``; backward ``2F`` (weight gradients) plus
    ``2(F - F0)`` (input gradients; the observations need none). The rollout runs one forward per
    step plus one at its start; in the bootstrap order (``trainer.bootstrap_at_time_limit``) also
    one on the reset observations at the start (one more per step instead when the env has no
    reset observations); the update runs ``num_epochs`` forward+backward
    passes over the ``B x E x A`` samples.
    """
    out: dict[str, Any] = {"policies": {}}
    total = 0.0
    B, E = trainer.steps_per_iter, trainer.env_wrapper.n_envs
    for tag, p in trainer.policies.items():
        shapes = linear_shapes(p.model)
        macs = sum(i * o for i, o in shapes)
        first = shapes[0][0] * shapes[0][1] if shapes else 0
        A = p.num_agents
        if trainer.rollout.reset_first:  # one forward per step, after the reset, and one at the start
            extra, per_step = 1, 1
        else:
            extra = 2 if trainer.reset_obs_known else 1
            per_step = 1 if trainer.reset_obs_known else 2
        rollout_samples = (B * per_step + extra) * E * A
        rollout = 2.0 * macs * rollout_samples
        update = 0.0
        if p.to_train:
            update = p.config.num_epochs * B * E * A * (2.0 * macs + 2.0 * macs + 2.0 * (macs - first))
        out["policies"][tag] = {"agents": A, "linear_shapes": shapes, "macs_per_sample": macs,
                                "rollout_flops": rollout, "update_flops": update}
        total += rollout + update
    out["total_flops"] = total
    return out


def gemm_rate(shapes: list[tuple[int, int]], rows: int = 4096, seconds: float = 1.0) -> dict[str, Any]:
    """float32 FLOP/s of ``F.linear`` over the given layer shapes (one pass = every layer once, best
    pass of about ``seconds``)."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    layers = [(torch.randn(rows, i, generator=gen), torch.randn(o, i, generator=gen), torch.randn(o, generator=gen))
              for i, o in sorted(set(shapes))]
    flops = sum(2.0 * rows * i * o for i, o in sorted(set(shapes)))
    for x, w, b in layers:  # warm-up
        F.linear(x, w, b)
    best, reps, start = float("inf"), 0, time.perf_counter()
    while time.perf_counter() - start < seconds or reps < 3:
        t0 = time.perf_counter()
        for x, w, b in layers:
            F.linear(x, w, b)
        best = min(best, time.perf_counter() - t0)
        reps += 1
    return {"flops_per_s": flops / best, "rows": rows, "shapes": sorted(set(shapes)), "repeats": reps}


def best_gemm_rate(shapes: list[tuple[int, int]]) -> dict[str, Any]:
    """The fastest of :func:`gemm_rate` over :data:`GEMM_ROWS` (the strictest floor)."""
    rates = [gemm_rate(shapes, rows, seconds=0.5) for rows in GEMM_ROWS]
    best = max(rates, key=lambda r: r["flops_per_s"])
    return {"flops_per_s": best["flops_per_s"], "rows": best["rows"], "shapes": best["shapes"],
            "by_rows": {r["rows"]: r["flops_per_s"] for r in rates}}


def rollout_buffer_bytes(trainer: Any) -> int:
    import torch

    def nbytes(x: Any) -> int:
        if isinstance(x, torch.Tensor):
            return x.numel() * x.element_size()
        if isinstance(x, dict):
            return sum(nbytes(v) for v in x.values())
        return 0

    total = 0
    for p in trainer.policies.values():
        b = p.buffers
        total += sum(nbytes(getattr(b, f)) for f in b.__dataclass_fields__)
    sh = trainer.rollout.shared
    total += nbytes(sh.done) + nbytes(sh.timestep) + nbytes(sh.rewards)
    return total


def rollout_mode(trainer: Any) -> str:
    """How the trainer's rollouts run: ``"<n> env parts"`` (one thread each) or ``"plain loop (<why>)"``."""
    import torch

    from warp_drive.training.engine.cpu_pipeline import why_not_parts

    reason = why_not_parts(trainer.rollout)
    if reason is None:
        return f"{min(torch.get_num_threads(), trainer.env_wrapper.n_envs)} env parts"
    return f"plain loop ({reason})"


# ---------------------------------------------------------------------------------- one config
def measure(name: str, iters: int, rollout: str = "auto") -> dict[str, Any]:
    """Runs in the child process: build, warm up, time ``iters`` iterations (``rollout``: "auto",
    as the trainer runs it, or "plain": the plain loop even where env parts apply)."""
    import numpy as np  # noqa: F401  (loaded before the baseline: not the trainer's memory)
    import torch

    import example_envs.tag_continuous.tag_continuous  # noqa: F401
    import warp_drive.training.example_training_script  # noqa: F401
    import warp_drive.training.trainer  # noqa: F401
    from common import make_trainer

    overrides, description = CONFIGS[name]
    # one iteration of a 2-env trainer first: library code and allocator pools touched by any run
    # are in the baseline, not counted as the config's memory
    tiny = make_trainer("tag_continuous", ["trainer.num_envs=2", "trainer.train_batch_size=4", "trainer.seed=0"],
                        backend="cpu", results_dir="/tmp/wd_bench_cpu_floor")
    tiny.env_wrapper.reset_all_envs()
    tiny.update(tiny.generate_rollout())
    shapes = sorted({s for p in tiny.policies.values() for s in linear_shapes(p.model)})  # same models
    rate_before = best_gemm_rate(shapes)  # outside the measured memory window
    del tiny
    gc.collect()
    base_rss = _status_mib("VmRSS")
    peak_ok = _reset_peak()
    t = make_trainer("tag_continuous", overrides + ["trainer.seed=0"], backend="cpu", results_dir="/tmp/wd_bench_cpu_floor")
    from warp_drive.training.engine.cpu_pipeline import SEPARABLE

    if rollout == "plain":
        setattr(type(t.env_wrapper.env), SEPARABLE, False)
    t.start_episodes()  # envs force-reset, running episode statistics restarted
    flops = policy_flops(t)
    if sorted({s for p in t.policies.values() for s in linear_shapes(p.model)}) != shapes:
        raise RuntimeError("the warm-up trainer's models differ from the measured ones")
    w0 = time.perf_counter()
    t.update(t.generate_rollout())  # warm-up iteration
    warm = time.perf_counter() - w0
    mode = rollout_mode(t)
    rollout_s, update_s, cpu_s = [], [], []
    for _ in range(iters):
        c0, r0 = time.process_time(), time.perf_counter()
        last = t.generate_rollout()
        r1 = time.perf_counter()
        metrics = t.update(last)
        r2 = time.perf_counter()
        cpu_s.append(time.process_time() - c0)
        rollout_s.append(r1 - r0)
        update_s.append(r2 - r1)
    peak = _status_mib("VmHWM")
    rate_after = best_gemm_rate(shapes)
    finite = all(bool(torch.isfinite(v).all()) for m in metrics.values() for v in m.values())
    if not finite:
        raise RuntimeError(f"non-finite update metrics: {metrics}")
    rate = max(rate_before["flops_per_s"], rate_after["flops_per_s"])
    iteration = min(a + b for a, b in zip(rollout_s, update_s))
    floor_s = flops["total_flops"] / rate
    buffers = rollout_buffer_bytes(t)
    peak_added = (peak - base_rss) * 2**20
    return {
        "config": name,
        "description": description,
        "overrides": overrides,
        "num_envs": t.env_wrapper.n_envs,
        "num_agents": t.env_wrapper.n_agents,
        "steps_per_env": t.steps_per_iter,
        "rollout_mode": mode,
        "agent_samples": t.steps_per_iter * t.env_wrapper.n_envs * t.env_wrapper.n_agents,
        "warmup_iteration_s": warm,
        "rollout_s": rollout_s,
        "update_s": update_s,
        "iteration_s": iteration,
        "iteration_cpu_s": cpu_s,
        "cpu_time_ratio": min(cpu_s) / (floor_s * torch.get_num_threads()),
        "flops": flops,
        "gemm_rate_before": rate_before,
        "gemm_rate_after": rate_after,
        "gemm_flops_per_s": rate,
        "time_floor_s": floor_s,
        "time_ratio": iteration / floor_s,
        "rollout_buffer_bytes": buffers,
        "rss_before_mib": base_rss,
        "peak_rss_mib": peak,
        "peak_added_bytes": peak_added,
        "peak_measured": peak_ok,
        "memory_ratio": peak_added / buffers,
        "env_steps_per_s": t.steps_per_iter * t.env_wrapper.n_envs / iteration,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", default=["small"], choices=sorted(CONFIGS))
    ap.add_argument("--iters", type=int, default=1, help="timed iterations per config (after one warm-up)")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    ap.add_argument("--label", default="", help="suffix of the results file name")
    ap.add_argument("--out", default=None, help="results file (default: results/cpu_floor[_<label>].json)")
    ap.add_argument("--rollout", default="auto", choices=("auto", "plain"),
                    help="auto: as the trainer runs it (env parts on >= 2 threads); plain: the plain loop")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(measure(args.child, args.iters, args.rollout)))
        return 0
    results = []
    for name in args.configs:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--iters", str(args.iters),
               "--rollout", args.rollout]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        load = os.getloadavg()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r["load_average_before"], r["load_average_after"] = load, os.getloadavg()
        results.append(r)
        print(f"{name} ({r['rollout_mode']}): iteration {r['iteration_s']:.2f} s "
              f"(rollout {min(r['rollout_s']):.2f} + update "
              f"{min(r['update_s']):.2f}), floor {r['time_floor_s']:.2f} s at {r['gemm_flops_per_s'] / 1e9:.1f} GFLOP/s "
              f"-> {r['time_ratio']:.2f}x (CPU time {r['cpu_time_ratio']:.2f}x); peak +{r['peak_added_bytes'] / 2**20:.0f} MiB vs rollout buffers "
              f"{r['rollout_buffer_bytes'] / 2**20:.0f} MiB -> {r['memory_ratio']:.2f}x", flush=True)
    doc = {"benchmark": "cpu_floor", "machine": machine_info(), "results": results}
    file_name = f"cpu_floor_{args.label}.json" if args.label else "cpu_floor.json"
    path = Path(args.out) if args.out else HERE / "results" / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], path.name).write_text(path.read_text())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
