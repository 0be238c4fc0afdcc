"""Do the bundled classic-control run configs learn to rl-baselines3-zoo's published returns?

For each env, its bundled config (``example_envs/classic_control/<env>/run_config.yaml``) trains
with several seeds (``trainer.seed`` and ``env.seed``) for the zoo's env-step budget of the same
algorithm (the config's ``num_episodes`` is set to that budget; the run stops there in any case).
At ``--checks`` evenly spaced points of the run the current policy plays one greedy episode in each of
``--eval_envs`` separate replicas (fresh start states, other seed than training's): the env steps and
training seconds at the first such check whose mean reaches the zoo's return are recorded. The
final policy is evaluated the same way (>= 100 greedy episodes). Seconds count training only
(rollouts and updates, not the evaluations).

Zoo rows (deterministic evaluation, rl-baselines3-zoo ``benchmark.md``): CartPole-v1 500 (PPO 100k,
A2C 500k), Acrobot-v1 -73.5 (PPO 1M) / -83.4 (A2C 500k), MountainCar-v0 -110.4 (PPO 1M),
MountainCarContinuous-v0 88.3 (PPO 20k) / 93.5 (DDPG 300k) / 94.7 (SAC 50k), Pendulum-v1 -172 (PPO 100k)
/ -152 (DDPG 20k) / -157 (SAC 20k).

Usage::

    # CPU (this file's committed results: benchmarks/results/learning_classic_control_cpu.json)
    python benchmarks/learning_classic_control.py --backend cpu --seeds 1 2 3
    # H100, each env within 60 s of wall clock is the goal
    python benchmarks/learning_classic_control.py --backend pycuda --seeds 1 2 3
    # one env, extra overrides on top of its bundled config
    python benchmarks/learning_classic_control.py --envs cartpole --set policy.shared.lr=0.002
    # SAC: the shipped warp_drive/training/run_configs/single_<env>_sac.yaml instead (results as <env>_sac)
    python benchmarks/learning_classic_control.py --algorithm sac --envs pendulum continuous_mountain_car

Results: JSON (host, CPU or GPU name, driver, torch, commit, seeds, the zoo row, per-seed figures and
their mean / min / max) under benchmarks/results/ (``--out`` to choose the file) and $OUT.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import math
import os
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

# warp_drive and example_envs (their run configs) from this tree, not an installed copy: a `pip install .`
# elsewhere once made this script train a config other than the tree's
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import cpu_model, environment  # noqa: E402

logger = logging.getLogger("learning_classic_control")

#: rl-baselines3-zoo's published deterministic returns and their env-step budgets, per algorithm.
ZOO: dict[str, dict[str, tuple[float, int]]] = {
    "cartpole": {"PPO": (500.0, 100_000), "A2C": (500.0, 500_000)},
    "acrobot": {"PPO": (-73.5, 1_000_000), "A2C": (-83.4, 500_000)},
    "mountain_car": {"PPO": (-110.4, 1_000_000)},
    "continuous_mountain_car": {"PPO": (88.3, 20_000), "DDPG": (93.5, 300_000), "SAC": (94.7, 50_000)},
    "pendulum": {"PPO": (-172.0, 100_000), "DDPG": (-152.0, 20_000), "SAC": (-157.0, 20_000)},
}
#: ``--algorithm`` -> the shipped run config of an env (None: the env folder's bundled config).
CONFIGS = {"bundled": None, "sac": "single_{env}_sac"}
GYM_IDS = {"cartpole": "CartPole-v1", "acrobot": "Acrobot-v1", "mountain_car": "MountainCar-v0",
           "continuous_mountain_car": "MountainCarContinuous-v0", "pendulum": "Pendulum-v1"}


@dataclass
class SeedResult:
    seed: int
    greedy_return_mean: float
    greedy_return_std: float
    eval_episodes: int
    env_steps: int
    train_seconds: float
    steps_to_threshold: int | None
    seconds_to_threshold: float | None
    curve: list[tuple[int, float]]


def load_config(env: str, seed: int, backend: str, overrides: list[str], basedir: str, algorithm: str = "bundled") -> Any:
    """The bundled config of ``env`` (``algorithm`` "sac": its shipped SAC config) with the seed,
    backend and ``overrides`` applied."""
    from example_envs import get_default_config_path
    from warp_drive.cli.setup_and_train import run_config_path
    from warp_drive.config import load_run_config

    name = CONFIGS[algorithm]
    path = get_default_config_path(env) if name is None else run_config_path(name.format(env=env))
    return load_run_config(path, [
        f"trainer.seed={seed}", f"env.seed={seed}", f"trainer.env_backend={backend}", f"saving.basedir={basedir}",
        "saving.metrics_log_freq=100000000", "saving.model_params_save_freq=100000000",
        "saving.checkpoint_every_seconds=0", *overrides])


def zoo_row(env: str, config: Any) -> tuple[str, float, int]:
    """``(algorithm, zoo return, zoo env steps)`` for the algorithm the config trains."""
    algorithm = next(iter(config.policy.values())).algorithm
    if algorithm not in ZOO[env]:
        raise SystemExit(f"{env}: the zoo has no {algorithm} row (rows: {sorted(ZOO[env])})")
    return (algorithm, *ZOO[env][algorithm])


def build(config: Any, env: str, backend: str, results_dir: str) -> Any:
    from warp_drive.training.run.build import build_trainer
    from warp_drive.training.setup_and_train import env_class_for

    return build_trainer(config, env_class_for(env), backend=backend, results_dir=results_dir, verbose=False)


def eval_config(config: Any, seed: int, eval_envs: int) -> Any:
    """The training config for ``eval_envs`` replicas with another env seed (one rollout step per
    iteration, one minibatch: the evaluator never trains)."""
    from warp_drive.config import load_run_config

    raw = config.to_dict()
    raw["env"]["seed"] = seed + 100_000
    raw["trainer"].update(num_envs=eval_envs, train_batch_size=eval_envs)
    for policy in raw["policy"].values():
        policy["num_minibatches"] = 1
    return load_run_config(raw)


def networks(trainer: Any) -> dict[str, torch.nn.Module]:
    """What acts in the env, per policy tag (DDPG: the actor)."""
    return {tag: p.nets.actor if hasattr(p, "nets") else p.model for tag, p in trainer.engine.policies.items()}


def greedy_returns(trainer: Any, evaluator: Any) -> np.ndarray:
    """The trainer's current policies, one greedy episode per replica of ``evaluator``."""
    for tag, net in networks(evaluator).items():
        net.load_state_dict(networks(trainer)[tag].state_dict())
    extra = {"random_baseline": False} if "random_baseline" in inspect.signature(evaluator.evaluate).parameters else {}
    result = evaluator.evaluate(deterministic=True, num_episodes=1, **extra)
    return np.asarray(next(iter(result.values()))["episode_return"], dtype=np.float64)


def train_one(env: str, seed: int, args: argparse.Namespace, basedir: str) -> tuple[SeedResult, dict[str, Any]]:
    config = load_config(env, seed, args.backend, args.set, basedir, args.algorithm)
    algorithm, threshold, budget = zoo_row(env, config)
    batch = config.trainer.train_batch_size
    iterations = min(budget // batch, config.trainer.num_iterations(config.env["episode_length"]))
    trainer = build(config, env, args.backend, f"{basedir}/train_{env}_{seed}")
    evaluator = build(eval_config(config, seed, args.eval_envs), env, args.backend, f"{basedir}/eval_{env}_{seed}")
    curve: list[tuple[int, float]] = []
    reached: tuple[int, float] | None = None
    seconds = 0.0
    done = 0
    every = max(1, round(iterations / args.checks))
    while done < iterations:
        step = min(every, iterations - done)
        start = time.perf_counter()
        trainer.train(step)
        if args.backend == "pycuda":
            torch.cuda.synchronize()
        seconds += time.perf_counter() - start
        done += step
        mean = float(greedy_returns(trainer, evaluator).mean())
        curve.append((done * batch, round(mean, 2)))
        logger.info("%s seed %d: %d env steps, %.1f s, greedy %.1f", env, seed, done * batch, seconds, mean)
        if reached is None and mean >= threshold:
            reached = (done * batch, seconds)
    final = greedy_returns(trainer, evaluator)
    for _ in range(math.ceil(args.eval_episodes / args.eval_envs) - 1):
        final = np.concatenate([final, greedy_returns(trainer, evaluator)])
    result = SeedResult(seed, float(final.mean()), float(final.std()), int(final.size), iterations * batch, seconds,
                        None if reached is None else reached[0], None if reached is None else round(reached[1], 2), curve)
    row = {"gym_id": GYM_IDS[env], "algorithm": algorithm, "zoo_return": threshold, "zoo_env_steps": budget}
    return result, row


def summarize(results: list[SeedResult], threshold: float) -> dict[str, Any]:
    returns = [r.greedy_return_mean for r in results]
    reached = [r for r in results if r.steps_to_threshold is not None]

    def stats(values: list[float]) -> dict[str, float] | None:
        return {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values))} if values else None

    return {"greedy_return": stats(returns), "seeds_reaching_threshold_at_some_check": len(reached),
            "seeds_final_at_or_above_threshold": sum(r >= threshold for r in returns),
            "steps_to_threshold": stats([float(r.steps_to_threshold) for r in reached]),
            "seconds_to_threshold": stats([float(r.seconds_to_threshold) for r in reached]),
            "train_seconds": stats([r.train_seconds for r in results])}


def merge(files: list[str], out: str | None) -> int:
    """One results file from several runs of the same envs on other seeds (say one job per GPU):
    the seeds of each env side by side, its summary over all of them, each file's environment kept."""
    if out is None:
        raise SystemExit("--merge needs --out (the merged results file)")
    docs = [json.loads(Path(f).read_text()) for f in files]
    envs: dict[str, Any] = {}
    for doc in docs:
        for key, entry in doc["envs"].items():
            merged = envs.setdefault(key, {"zoo": entry["zoo"], "seeds": [], "load_average_at_end": []})
            twice = {s["seed"] for s in merged["seeds"]} & {s["seed"] for s in entry["seeds"]}
            if twice:
                raise SystemExit(f"{key}: seed(s) {sorted(twice)} in more than one file")
            merged["seeds"] += entry["seeds"]
            merged["load_average_at_end"].append(entry["load_average_at_end"])
    for entry in envs.values():
        entry["seeds"].sort(key=lambda s: s["seed"])
        entry["summary"] = summarize([SeedResult(**{**s, "curve": [tuple(c) for c in s["curve"]]}) for s in entry["seeds"]],
                                     entry["zoo"]["zoo_return"])
    first = docs[0]
    payload = {**{k: first[k] for k in ("benchmark", "backend", "eval_envs", "algorithm", "overrides") if k in first},
               "environment": first["environment"], "seeds": sorted({s["seed"] for e in envs.values() for s in e["seeds"]}),
               "envs": envs, "merged_from": [{"file": Path(f).name, "envs": sorted(d["envs"]), "seeds": d["seeds"],
                                              "environment": d["environment"]} for f, d in zip(files, docs)]}
    Path(out).write_text(json.dumps(payload, indent=2))
    print(f"results: {out}")
    return 0


def host() -> dict[str, Any]:
    """Host name, CPU model, core count and torch threads beside :func:`common.environment`."""
    return {"hostname": socket.gethostname(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__, **environment()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=("cpu", "pycuda"), default="cpu")
    p.add_argument("--envs", nargs="+", default=None, choices=list(ZOO), help="default: every env (with --algorithm "
                   "sac: those with a SAC config)")
    p.add_argument("--algorithm", choices=list(CONFIGS), default="bundled",
                   help="bundled: each env's own run config; sac: warp_drive/training/run_configs/single_<env>_sac.yaml")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--checks", type=int, default=20, help="greedy checks during each run (evenly spaced)")
    p.add_argument("--eval_envs", type=int, default=100, help="replicas of the evaluator (one episode each per check)")
    p.add_argument("--eval_episodes", type=int, default=100, help="greedy episodes of the final evaluation (>= 100)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest for these small nets)")
    p.add_argument("--set", nargs="*", default=[], help="dotted overrides on top of every bundled config")
    p.add_argument("--out", default=None, help="results JSON (default benchmarks/results/learning_classic_control_<device>.json)")
    p.add_argument("--update", action="store_true", help="keep the other envs of an existing --out file (one env at a time)")
    p.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                   help="no training: gather the seeds of these results files (one job per GPU and seed) into --out")
    args = p.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out)
    if args.envs is None:
        args.envs = [env for env in ZOO if args.algorithm == "bundled" or "SAC" in ZOO[env]]
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    payload: dict[str, Any] = {"benchmark": "learning_classic_control", "environment": host(), "backend": args.backend,
                               "seeds": args.seeds, "overrides": args.set, "eval_envs": args.eval_envs,
                               "algorithm": args.algorithm, "envs": {}}
    with tempfile.TemporaryDirectory(prefix="wd_learning_") as basedir:
        for env in args.envs:
            runs, row = [], {}
            for seed in args.seeds:
                result, row = train_one(env, seed, args, basedir)
                runs.append(result)
                logger.info("%s seed %d: greedy %.1f over %d episodes, threshold at %s env steps / %s s", env, seed,
                            result.greedy_return_mean, result.eval_episodes, result.steps_to_threshold,
                            result.seconds_to_threshold)
            key = env if args.algorithm == "bundled" else f"{env}_{args.algorithm}"
            payload["envs"][key] = {"zoo": row, "summary": summarize(runs, row["zoo_return"]),
                                    "load_average_at_end": os.getloadavg(),
                                    "seeds": [asdict(r) for r in runs]}
            logger.info("%s: %s", key, json.dumps(payload["envs"][key]["summary"]))
    device = "cpu" if args.backend == "cpu" else (payload["environment"].get("cuda_device") or "gpu").replace(" ", "_")
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / f"learning_classic_control_{device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.update and out.is_file():
        previous = json.loads(out.read_text())
        payload["envs"] = {**previous.get("envs", {}), **payload["envs"]}
        first = {"envs": sorted(previous.get("envs", {})), **{k: previous.get(k) for k in ("environment", "seeds", "overrides")}}
        payload["runs"] = [*previous.get("runs", [first]),
                           {"envs": args.envs, "environment": payload["environment"], "seeds": args.seeds, "overrides": args.set}]
    out.write_text(json.dumps(payload, indent=2))
    if os.environ.get("OUT"):
        (Path(os.environ["OUT"]) / out.name).write_text(out.read_text())
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
