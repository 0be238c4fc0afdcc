"""Time to a good policy (issue 37, item 4): seconds of training until the greedy policy reaches a target.

For each config and seed, the config's fast run config (``warp_drive/training/run_configs/single_<env>_fast.yaml``)
trains for a wall-clock budget (``--max-seconds-factor`` x the target's seconds, default 5x). The greedy
policy plays one episode in each of ``--eval-envs`` (100) separate replicas (fresh start states, another env seed
than training's) after the first iteration and then every ``target seconds / --evals-per-target`` seconds of
training (or every ``--eval-every-iters`` iterations); the training seconds, env steps and iterations at the first
evaluation whose mean return reaches the threshold are recorded, and the run stops there (``--full-budget``: it
trains on to the budget; the final return is then the last evaluation's). Training seconds count the rollouts and
updates from the first ``train`` call on (CUDA-graph capture of the first iteration included, and reported apart
as ``first_iteration_s``); the evaluations are timed apart (``eval_seconds``), as are the builds.

Kernel builds are cached before any clock starts: each config first runs once untimed (a warm-up: build,
``--warmup-iters`` iterations, one evaluation), which compiles its CUDA kernels into the on-disk cache and
initializes cuBLAS and the allocator; the timed seeds come after it. On the cpu backend the warm-up only
initializes.

Targets (greedy, 100 fresh-start episodes): CartPole-v1 500 within 2 s, Acrobot-v1 >= -80 within 5 s,
MountainCar-v0 >= -110 within 10 s, Pendulum-v1 >= -172 within 10 s, MountainCarContinuous-v0 >= 90 within 10 s.
``met`` is reached within the target's seconds.

Tag (``--configs tag``, not in the default set): the bundled Tag settings (``learning_side_by_side.CHOSEN``) on
the published policies' env config train for the budget (60 s x the factor); every ``--tag-eval-every-s``
seconds the current policies play 2.7.1's published 1e9-step policies (``learning_side_by_side.Evaluator``,
the published start state, 400 envs x 2 episodes): met when our taggers tag a larger fraction of the published
runners than the published taggers do, and the published taggers tag a smaller fraction of our runners than
of their own runners. Needs the published policies (``$WARP_DRIVE_PRETRAINED_DIR``, or
``.device/anchor/pretrained`` on the GPU machine).

Usage::

    python benchmarks/bench_time_to_policy.py                          # every classic-control config, seeds 0 1 2
    python benchmarks/bench_time_to_policy.py --configs cartpole --seeds 0 --device cpu
    python benchmarks/bench_time_to_policy.py --configs tag --seeds 0 --max-seconds-factor 1

Results: JSON through ``common.write_results`` (GPU, driver, commit, date) as
``benchmarks/results/time_to_policy_<GPU or cpu>.json`` (and $OUT/time_to_policy.json), written again after
every seed, and a printed table (config, seed, seconds to threshold, env steps, target, met).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_results  # noqa: E402

logger = logging.getLogger("time_to_policy")


@dataclass(frozen=True)
class Target:
    """One row of the benchmark: an env, its fast run config and its target."""

    env: str          # example env name
    config: str       # shipped run config (warp_drive/training/run_configs/<config>.yaml)
    gym_id: str
    threshold: float  # greedy mean return over the evaluation episodes
    seconds: float    # training seconds within which the threshold is to be reached


TARGETS: dict[str, Target] = {
    "cartpole": Target("cartpole", "single_cartpole_fast", "CartPole-v1", 500.0, 2.0),
    "acrobot": Target("acrobot", "single_acrobot_fast", "Acrobot-v1", -80.0, 5.0),
    "mountain_car": Target("mountain_car", "single_mountain_car_fast", "MountainCar-v0", -110.0, 10.0),
    "pendulum": Target("pendulum", "single_pendulum_fast", "Pendulum-v1", -172.0, 10.0),
    "continuous_mountain_car": Target("continuous_mountain_car", "single_continuous_mountain_car_fast",
                                      "MountainCarContinuous-v0", 90.0, 10.0),
}
#: Tag's target seconds (the criterion is against the published policies, see the module doc)
TAG_SECONDS = 60.0
BACKENDS = {"cuda": "pycuda", "cpu": "cpu"}


# ----------------------------------------------------------------------------- the timed loop (backend-free)
@dataclass
class Run:
    """What :func:`time_to_threshold` measured for one run."""

    threshold: float
    budget_s: float
    reached: bool = False
    seconds_to_threshold: float | None = None
    env_steps_to_threshold: int | None = None
    iterations_to_threshold: int | None = None
    final_return: float | None = None
    train_seconds: float = 0.0
    env_steps: int = 0
    iterations: int = 0
    first_iteration_s: float | None = None
    eval_seconds: float = 0.0
    evals: int = 0
    stopped: str = ""
    curve: list[tuple[int, int, float, float]] = field(default_factory=list)  # (iteration, env steps, train s, return)


def time_to_threshold(train_one: Callable[[], int], evaluate: Callable[[], float], threshold: float, budget_s: float, *,
                      eval_interval_s: float | None = None, eval_every_iters: int | None = None,
                      stop_at_threshold: bool = True, clock: Callable[[], float] = time.perf_counter) -> Run:
    """Trains with ``train_one`` (one iteration, synchronized; returns the env steps done so far) until ``budget_s``
    seconds of training, evaluating with ``evaluate`` (the greedy mean return) after the first iteration and then
    every ``eval_interval_s`` seconds of training or every ``eval_every_iters`` iterations, and once more at the end
    of the budget if the last iteration was not evaluated. Evaluations are timed apart and not counted as training.
    The threshold counts as reached at the first evaluation whose return is >= ``threshold``: its training seconds,
    env steps and iteration are recorded; with ``stop_at_threshold`` the run stops there."""
    if (eval_interval_s is None) == (eval_every_iters is None):
        raise ValueError("give exactly one of eval_interval_s and eval_every_iters")
    run = Run(threshold=threshold, budget_s=budget_s)
    next_mark = 0.0

    def check() -> bool:
        start = clock()
        mean = float(evaluate())
        run.eval_seconds += clock() - start
        run.evals += 1
        run.final_return = mean
        run.curve.append((run.iterations, run.env_steps, round(run.train_seconds, 4), round(mean, 3)))
        if not run.reached and mean >= threshold:
            run.reached = True
            run.seconds_to_threshold = run.train_seconds
            run.env_steps_to_threshold = run.env_steps
            run.iterations_to_threshold = run.iterations
        return run.reached and stop_at_threshold

    while True:
        start = clock()
        run.env_steps = int(train_one())
        took = clock() - start
        run.train_seconds += took
        run.iterations += 1
        if run.first_iteration_s is None:
            run.first_iteration_s = took
        over = run.train_seconds >= budget_s
        if eval_every_iters is not None:
            due = run.iterations == 1 or run.iterations % eval_every_iters == 0
        else:
            due = run.iterations == 1 or run.train_seconds >= next_mark
        if due or over:
            if eval_interval_s is not None:
                next_mark = run.train_seconds + eval_interval_s
            if check():
                run.stopped = "threshold"
                return run
        if over:
            run.stopped = "budget"
            return run


# ----------------------------------------------------------------------------- classic control
def sync(backend: str) -> None:
    if backend != "cpu" and torch.cuda.is_available():
        torch.cuda.synchronize()


def load_config(target: Target, seed: int, backend: str, overrides: list[str], basedir: str) -> Any:
    """The target's fast run config with ``overrides``, then seeded, on ``backend``, with nothing written during
    training and a run length that the budget, not ``num_episodes``, ends."""
    from warp_drive.cli.setup_and_train import run_config_path
    from warp_drive.config import load_run_config

    return load_run_config(run_config_path(target.config), [
        *overrides, f"trainer.seed={seed}", f"env.seed={seed}", f"trainer.env_backend={backend}",
        f"saving.basedir={basedir}", "trainer.num_episodes=100000000", "trainer.eval_every=0",
        "saving.metrics_log_freq=1000000000", "saving.model_params_save_freq=1000000000",
        "saving.checkpoint_every_seconds=0"])


def classic_trainers(target: Target, seed: int, backend: str, overrides: list[str], basedir: str,
                     eval_envs: int) -> tuple[Any, Any]:
    """(training trainer, evaluation trainer of ``eval_envs`` replicas)."""
    import learning_classic_control as lcc

    config = load_config(target, seed, backend, overrides, basedir)
    trainer = lcc.build(config, target.env, backend, f"{basedir}/train_{target.env}_{seed}_{time.time_ns()}")
    trainer.handle_signals = False
    evaluator = lcc.build(lcc.eval_config(config, seed, eval_envs), target.env, backend,
                          f"{basedir}/eval_{target.env}_{seed}_{time.time_ns()}")
    evaluator.handle_signals = False
    return trainer, evaluator


def greedy_mean(trainer: Any, evaluator: Any) -> float:
    import learning_classic_control as lcc

    return float(lcc.greedy_returns(trainer, evaluator).mean())


def run_classic(name: str, target: Target, seed: int, budget: float, args: argparse.Namespace,
                basedir: str) -> dict[str, Any]:
    backend = BACKENDS[args.device]
    start = time.perf_counter()
    trainer, evaluator = classic_trainers(target, seed, backend, args.set, basedir, args.eval_envs)
    sync(backend)
    build_s = time.perf_counter() - start

    def train_one() -> int:
        trainer.train(1)
        sync(backend)
        return int(trainer.engine.perf["steps"])

    interval = None if args.eval_every_iters else target.seconds / args.evals_per_target
    run = time_to_threshold(train_one, lambda: greedy_mean(trainer, evaluator), target.threshold, budget,
                            eval_interval_s=interval, eval_every_iters=args.eval_every_iters,
                            stop_at_threshold=not args.full_budget)
    policy = next(iter(trainer.engine.config.policy.values()))
    row = {"config": name, "env": target.env, "run_config": target.config, "gym_id": target.gym_id, "seed": seed,
           "algorithm": policy.algorithm, "num_envs": trainer.engine.config.trainer.num_envs,
           "train_batch_size": trainer.engine.config.trainer.train_batch_size, "target_return": target.threshold,
           "target_seconds": target.seconds, "met": bool(run.reached and run.seconds_to_threshold <= target.seconds),
           "build_s": round(build_s, 3), **asdict(run)}
    for closing in (trainer, evaluator):
        closing.graceful_close()
    return row


def warm_up(target: Target, args: argparse.Namespace, basedir: str) -> float:
    """One untimed run of the config: builds (CUDA kernels compiled into the disk cache), a few iterations
    (graph capture, cuBLAS) and one evaluation; returns its seconds."""
    backend = BACKENDS[args.device]
    start = time.perf_counter()
    trainer, evaluator = classic_trainers(target, 12345, backend, args.set, basedir, args.eval_envs)
    trainer.train(args.warmup_iters)
    greedy_mean(trainer, evaluator)
    sync(backend)
    for closing in (trainer, evaluator):
        closing.graceful_close()
    del trainer, evaluator
    release_memory()
    return time.perf_counter() - start


def release_memory() -> None:
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------- Tag against the published policies
def run_tag(seed: int, budget: float, args: argparse.Namespace, basedir: str) -> dict[str, Any]:
    """Our Tag settings on the published env config, trained for the budget, played against the published
    policies every ``--tag-eval-every-s`` seconds of training (module doc)."""
    import learning_side_by_side as lsbs

    from warp_drive.training.run.checkpoint import policy_file_state

    backend = BACKENDS[args.device]
    lsbs.BACKEND = backend
    folder = Path(basedir) / f"tag_{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    ev = lsbs.Evaluator(num_envs=args.tag_eval_envs)
    bar = ev.tagged("published-1e9", "published-1e9")
    cfg = lsbs.ours_config([*args.tag_set, f"trainer.seed={seed}", f"env.seed={seed}"])
    warm = lsbs.build_trainer(cfg)
    warm.handle_signals = False
    warm.train(args.warmup_iters)
    lsbs.sync()
    lsbs.release(warm)
    trainer = lsbs.build_trainer(cfg)
    trainer.handle_signals = False
    lsbs.sync()
    build_s = time.perf_counter() - start
    scores: list[dict[str, Any]] = []

    def train_one() -> int:
        trainer.train(1)
        lsbs.sync()
        return int(trainer.engine.perf["steps"])

    def evaluate() -> float:
        mark = len(scores)
        for tag, policy in trainer.engine.policies.items():
            torch.save({k: v.detach().cpu() for k, v in policy_file_state(policy.model).items()},
                       folder / lsbs.SNAPSHOT.format(mark=mark, tag=tag))
        score = ev.versus_published(folder, mark)
        scores.append(score)
        taggers = score["taggers_vs_published_runners"]["mean"] - bar["mean"]
        runners = bar["mean"] - score["published_taggers_vs_runners"]["mean"]
        logger.info("tag seed %d: our taggers %.3f / published taggers on our runners %.3f (published vs published "
                    "%.3f)", seed, score["taggers_vs_published_runners"]["mean"],
                    score["published_taggers_vs_runners"]["mean"], bar["mean"])
        return min(taggers, runners)  # > 0: better than the published policies from both sides

    run = time_to_threshold(train_one, evaluate, 1e-12, budget, eval_interval_s=args.tag_eval_every_s,
                            stop_at_threshold=not args.full_budget)
    lsbs.release(trainer)
    row = {"config": "tag", "run_config": f"learning_side_by_side.ours_config ({lsbs.CHOSEN})", "seed": seed,
           "algorithm": "PPO", "target_return": "taggers and runners both beat the published policies' own match",
           "target_seconds": TAG_SECONDS, "published_vs_published": bar, "scores": scores,
           "met": bool(run.reached and run.seconds_to_threshold <= TAG_SECONDS), "build_s": round(build_s, 3),
           **asdict(run)}
    row["threshold"] = "margin > 0"
    return row


# ----------------------------------------------------------------------------- output
def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == name]
        reached = [r["seconds_to_threshold"] for r in mine if r["reached"]]
        steps = [r["env_steps_to_threshold"] for r in mine if r["reached"]]
        out[name] = {"seeds": len(mine), "seeds_met": sum(r["met"] for r in mine),
                     "seeds_reached": len(reached), "target_seconds": mine[0]["target_seconds"],
                     "seconds_to_threshold_median": float(np.median(reached)) if reached else None,
                     "seconds_to_threshold_max": max(reached) if reached else None,
                     "env_steps_to_threshold_median": float(np.median(steps)) if steps else None}
    return out


def table(rows: list[dict[str, Any]]) -> str:
    head = ("config", "seed", "s to threshold", "env steps", "iterations", "target", "met", "final", "train s", "eval s")
    lines = [head]
    for r in rows:
        target = (f">= {r['target_return']:g} in {r['target_seconds']:g} s" if isinstance(r["target_return"], float)
                  else f"beat published in {r['target_seconds']:g} s")
        fmt = (lambda v, f: "-" if v is None else format(v, f))
        lines.append((r["config"], str(r["seed"]), fmt(r["seconds_to_threshold"], ".2f"),
                      fmt(r["env_steps_to_threshold"], ","), fmt(r["iterations_to_threshold"], "d"), target,
                      "yes" if r["met"] else "no", fmt(r["final_return"], ".1f"), f"{r['train_seconds']:.2f}",
                      f"{r['eval_seconds']:.2f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", nargs="+", default=list(TARGETS), choices=[*TARGETS, "tag"],
                   help="default: the classic-control configs (tag is opt-in)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--device", choices=list(BACKENDS), default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--max-seconds-factor", type=float, default=5.0, help="budget = this x the target's seconds")
    p.add_argument("--full-budget", action="store_true", help="train to the budget instead of stopping at the threshold")
    p.add_argument("--evals-per-target", type=float, default=20.0,
                   help="evaluate every (target seconds / this) seconds of training")
    p.add_argument("--eval-every-iters", type=int, default=None,
                   help="evaluate every this many iterations instead (CPU tuning: env steps, not seconds)")
    p.add_argument("--eval-envs", type=int, default=100, help="greedy episodes per evaluation (one per replica)")
    p.add_argument("--warmup-iters", type=int, default=3)
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up run of each config")
    p.add_argument("--set", nargs="*", default=[], help="dotted overrides on top of every classic-control config")
    p.add_argument("--tag-set", nargs="*", default=[], help="dotted overrides on top of the Tag settings")
    p.add_argument("--tag-eval-every-s", type=float, default=10.0)
    p.add_argument("--tag-eval-envs", type=int, default=400)
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds for the whole command: budgets shrink to fit what is left (a run that cannot get its "
                        "target's seconds is skipped and listed as such)")
    p.add_argument("--results-dir", default=None, help="default: $WARP_DRIVE_BENCH_RESULTS or benchmarks/results")
    p.add_argument("--name", default="time_to_policy", help="results file name stem")
    p.add_argument("--threads", type=int, default=1, help="torch threads on the cpu backend")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("warp_drive.training.long_runs").setLevel(logging.ERROR)  # the budget ends runs, not num_episodes
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    began = time.perf_counter()
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    payload: dict[str, Any] = {"device": args.device, "seeds": args.seeds, "configs": args.configs,
                               "max_seconds_factor": args.max_seconds_factor, "overrides": args.set,
                               "tag_overrides": args.tag_set, "eval_envs": args.eval_envs,
                               "stop_at_threshold": not args.full_budget,
                               "evaluation": (f"every {args.eval_every_iters} iterations" if args.eval_every_iters else
                                              f"every target seconds / {args.evals_per_target:g} of training"),
                               "warm_up": ("none" if args.no_warmup else f"each config once, untimed: build, "
                                           f"{args.warmup_iters} iterations, one evaluation (kernels compiled and "
                                           "cached before any timed seed)"),
                               "timing": "training seconds from the first train call (first iteration's CUDA-graph "
                                         "capture included, also reported as first_iteration_s); evaluations and "
                                         "builds timed apart"}
    results_dir = Path(args.results_dir) if args.results_dir else None
    path: Path | None = None
    with tempfile.TemporaryDirectory(prefix="wd_time_to_policy_") as basedir:
        warmups: dict[str, float] = {}
        for name in args.configs:  # every config's kernels built and cached before the first timed seed
            if name != "tag" and not args.no_warmup:
                warmups[name] = warm_up(TARGETS[name], args, basedir)
                logger.info("%s: warm-up %.1f s", name, warmups[name])
        payload["warmup_s"] = {k: round(v, 2) for k, v in warmups.items()}
        for seed in args.seeds:  # seeds outside: with --time-limit, every config gets its first seed first
            for name in args.configs:
                seconds = TAG_SECONDS if name == "tag" else TARGETS[name].seconds
                budget = seconds * args.max_seconds_factor
                if args.time_limit is not None:  # room for builds and evaluations: a fifth of what is left, 20 s at least
                    left = args.time_limit - (time.perf_counter() - began)
                    if 0.8 * left - 20 < seconds:
                        skipped.append({"config": name, "seed": seed, "why": f"{left:.0f} s left of --time-limit"})
                        logger.info("skipped %s seed %d: %.0f s left of --time-limit", name, seed, left)
                        continue
                    budget = min(budget, 0.8 * left - 20)
                row = (run_tag(seed, budget, args, basedir) if name == "tag"
                       else run_classic(name, TARGETS[name], seed, budget, args, basedir))
                row["warmup_s"] = payload["warmup_s"].get(name)
                release_memory()
                rows.append(row)
                logger.info("%s seed %d: %s at %s s, %s env steps (final %.1f, %d evaluations, %.1f s of them)", name,
                            seed, "reached" if row["reached"] else "not reached", row["seconds_to_threshold"],
                            row["env_steps_to_threshold"], row["final_return"], row["evals"], row["eval_seconds"])
                rows.sort(key=lambda r: (args.configs.index(r["config"]), args.seeds.index(r["seed"])))
                payload.update(rows=rows, skipped=skipped, summary=summarize(rows))
                path = write_results(args.name, payload, results_dir)
    print(table(rows))
    print(f"results: {path}" if rows else "nothing ran")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
