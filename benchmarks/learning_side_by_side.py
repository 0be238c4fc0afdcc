"""Learning quality side by side (GPU): this project and the reference (rl-warp-drive 2.7.1) train
Tag continuous for the same wall-clock budgets on the published run config, then every pairing of
taggers and runners from {ours-2min, ours-5min, reference-2min, reference-5min, published-1e9,
uniform random} plays in this project's env.

Two GPU-machine commands, each under 10 minutes (after ``source .device/setup.sh``), in either
order; each trains one framework for 5 minutes and evaluates its snapshots against the published
policies, and the second one also plays the cross-play matrix and writes the results JSON::

    python benchmarks/learning_side_by_side.py reference   # ~7 min
    python benchmarks/learning_side_by_side.py ours        # ~7 min
    python benchmarks/learning_side_by_side.py plot        # anywhere: heatmap and curves (PNG)

``crossplay`` plays the matrices again from the stored runs of both (GPU, about 2 minutes).

The second command needs the first one's ``benchmarks/results/side_by_side/<framework>/`` (its
snapshots and run.json) in its tree: automatic on a machine that keeps its files; with a copied
tree, copy $OUT's ``side_by_side/<framework>`` back first. ``sweep`` trains candidate settings for
a short budget each and scores them against the published policies: how the Tag defaults were
chosen (``SWEEP``, ``CHOSEN``).

One run of each framework makes both budgets: the 2-minute policies are the 5-minute run's
snapshot at 120 s (nothing in either config depends on the total budget: schedules follow env
steps). The clock starts when training starts (the reference's ``train()``, our first
``train(1)``) and includes everything after: CUDA-graph capture, rollouts, updates; builds
(nvcc, data push) are timed and reported apart. Both run the published env config with the same
env seed and trainer seed on the same GPU, one after the other.

Start states. The published policies were trained from one start state (2.7.1's resets restore the
host reset's layout in every env); ours train from fresh start states (``env.fresh_start_states``,
a new layout per env and episode). Everything is scored both ways: the curve and the 6 x 6
cross-play from the published config's own start state (``crossplay``), and the snapshots at each
budget and a 4 x 4 cross-play of the 5-minute policies, published and random from fresh start
states (``versus_published_fresh_starts``, ``crossplay_fresh_starts``).

Tagged fraction: the runners' return is -10 when tagged and +1 when not (the published config has no
step rewards), so the fraction of runners tagged in an episode is (1 - mean runner return) / 11. The
sample unit is one env-episode; intervals are mean +- 1.96 standard errors over them.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("WARP_DRIVE_BENCH_RESULTS") or Path(__file__).resolve().parent / "results")
SIDE = RESULTS / "side_by_side"
FILES = {"tagger": "tagger_1000010000.state_dict", "runner": "runner_1000010000.state_dict"}
BUDGETS = (120, 300)
CURVE_EVERY = 30
SEED = 1234
EVAL_ENVS, EVAL_EPISODES = 400, 2
SNAPSHOT = "{mark}s_{tag}.state_dict"  # <framework folder>/<SNAPSHOT>: flat, so copies of $OUT keep it
FIXED_SOURCES = ("published-1e9", "random")


def label(framework: str, seconds: int) -> str:
    """``ours-2min`` for 120 s, ``ours-45s`` for 45 s."""
    return f"{framework}-{seconds // 60}min" if seconds % 60 == 0 else f"{framework}-{seconds}s"


def default_sources(budgets=BUDGETS) -> tuple[str, ...]:
    return (*(label(f, b) for f in ("ours", "reference") for b in budgets), *FIXED_SOURCES)


SOURCES = default_sources()  # ours-2min, ours-5min, reference-2min, reference-5min, published-1e9, random
TAG_PENALTY, END_REWARD = -10.0, 1.0
ANCHOR_SITE = "/tmp/anchor_site"
BACKEND = "pycuda"  # the CPU smoke test sets "cpu"

logger = logging.getLogger("side_by_side")

#: Candidate settings scored by ``sweep`` (dotted overrides on top of the published run config).
PPO = ["policy.{p}.algorithm=PPO", "policy.{p}.gae_lambda=0.95", "policy.{p}.clip_param=0.2",
       "policy.{p}.normalize_advantage=true", "policy.{p}.vf_loss_coeff=0.5", "policy.{p}.max_grad_norm=0.5"]
SWEEP = {
    "published-settings": [],
    "a2c-2000envs": ["trainer.num_envs=2000", "trainer.train_batch_size=40000"],
    "ppo-lr1e-3": ["trainer.num_envs=1000", "trainer.train_batch_size=40000", *PPO,
                   "policy.{p}.lr=0.001", "policy.{p}.entropy_coeff=0.01", "policy.{p}.num_epochs=2",
                   "policy.{p}.num_minibatches=2"],
    "ppo-lr3e-4": ["trainer.num_envs=1000", "trainer.train_batch_size=40000", *PPO,
                   "policy.{p}.lr=0.0003", "policy.{p}.entropy_coeff=0.01", "policy.{p}.num_epochs=2",
                   "policy.{p}.num_minibatches=2"],
    "ppo-lr1e-3-ent05": ["trainer.num_envs=1000", "trainer.train_batch_size=40000", *PPO,
                         "policy.{p}.lr=0.001", "policy.{p}.entropy_coeff=0.05", "policy.{p}.num_epochs=2",
                         "policy.{p}.num_minibatches=2"],
    "a2c-gae-lr1e-3": ["trainer.num_envs=1000", "trainer.train_batch_size=40000", "policy.{p}.gae_lambda=0.95",
                       "policy.{p}.normalize_advantage=true", "policy.{p}.lr=0.001",
                       "policy.{p}.entropy_coeff=0.01"],
    # round 2 (120 s): the runners learned least in round 1 (55 s); more updates per sample, asymmetric lrs
    "ppo-asym-4x4": ["trainer.num_envs=1000", "trainer.train_batch_size=40000", *PPO, "policy.{p}.entropy_coeff=0.01",
                     "policy.runner.lr=0.001", "policy.tagger.lr=0.0003", "policy.{p}.num_epochs=4",
                     "policy.{p}.num_minibatches=4"],
    # round 3 (300 s each, H200, learning_sweep_round3_H200.json): round 2's choice, smaller batches
    # (more updates per second), the bf16 update and tagger lr 1e-3; the taggers plateau at 68-70% in
    # every variant, this one is the best from both sides
    "ppo-asym-4x4-500envs": ["trainer.num_envs=500", "trainer.train_batch_size=20000", *PPO,
                             "policy.{p}.entropy_coeff=0.01", "policy.runner.lr=0.001", "policy.tagger.lr=0.001",
                             "policy.{p}.num_epochs=4", "policy.{p}.num_minibatches=4",
                             "trainer.update_precision=bf16"],
    "ppo-lr1e-3-2000envs": ["trainer.num_envs=2000", "trainer.train_batch_size=40000", *PPO,
                            "policy.{p}.lr=0.001", "policy.{p}.entropy_coeff=0.01", "policy.{p}.num_epochs=2",
                            "policy.{p}.num_minibatches=2"],
}


# ----------------------------------------------------------------------------- configs
def pretrained_dir() -> Path:
    for c in (os.environ.get("WARP_DRIVE_PRETRAINED_DIR"), ROOT.parent / "shared/device/anchor/pretrained",
              ROOT / ".device/anchor/pretrained"):
        if c and all((Path(c) / f).is_file() for f in (*FILES.values(), "run_config.yaml")):
            return Path(c)
    raise SystemExit("the published Tag policies are not here: set $WARP_DRIVE_PRETRAINED_DIR")


def published_config() -> dict:
    """The run config the published policies were trained with, plus a trainer seed (2.7.1 needs
    one on Python 3.12) and settings that keep long runs from ending or writing checkpoints."""
    from warp_drive.config._yaml import yaml_loads

    cfg = yaml_loads((pretrained_dir() / "run_config.yaml").read_text())
    cfg["trainer"].update(seed=SEED, num_episodes=10**7)
    cfg["saving"].update(metrics_log_freq=10**9, model_params_save_freq=10**9, basedir="/tmp/wd_side_by_side")
    return cfg


# round 6 (benchmarks/tag_sweep.py, 300 s, two seeds, learning_sweep_round6_H200.json): round 3's choice
# with the runners at 1 epoch: twice the env steps in the same time, and taggers past the published ones
SWEEP["ppo-500envs-runner1epoch"] = [*SWEEP["ppo-asym-4x4-500envs"], "policy.runner.num_epochs=1"]

#: The sweep candidate chosen as this project's Tag defaults (round 6: the first to beat the published
#: policies from both sides); example_envs/tag_continuous/run_config.yaml carries the same settings (a
#: CPU test checks).
CHOSEN = "ppo-500envs-runner1epoch"
COMMON = ["saving.checkpoint_every_seconds=0", "trainer.bootstrap_at_time_limit=false"]


def candidate_config(name: str, overrides: list[str] = ()) -> dict:
    """The published run config with the settings of sweep candidate ``name``, then ``overrides``."""
    from warp_drive.config.load import apply_override

    cfg = published_config()
    for o in [*COMMON, *expand(SWEEP[name]), *overrides]:
        apply_override(cfg, o)
    return cfg


def ours_config(overrides: list[str] = ()) -> dict:
    """The published run config with this project's chosen Tag settings and fresh start states
    (every env replica and episode starts from its own layout, as the bundled config does), then
    ``overrides``."""
    return candidate_config(CHOSEN, ["env.fresh_start_states=true", *overrides])


def expand(overrides: list[str]) -> list[str]:
    return [o.format(p=p) for o in overrides for p in (("tagger", "runner") if "{p}" in o else ("",))]


# ----------------------------------------------------------------------------- our trainer
def build_trainer(cfg: dict, num_envs: int | None = None, fresh: bool | None = None):
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    cfg = copy.deepcopy(cfg)
    if fresh is not None:
        cfg["env"]["fresh_start_states"] = fresh
    if num_envs is not None:
        cfg["trainer"].update(num_envs=num_envs, train_batch_size=num_envs * 50)
    wrapper = EnvWrapper(env_obj=TagContinuous(**cfg["env"]), num_envs=cfg["trainer"]["num_envs"], env_backend=BACKEND)
    pmap = {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)}
    return Trainer(wrapper, cfg, pmap, verbose=False, results_dir=f"run_{os.getpid()}_{time.time_ns()}")


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def release(trainer) -> None:
    import torch

    trainer.graceful_close()
    del trainer
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def train_ours(cfg: dict, marks: list[int], out: Path, by_iterations: bool = False) -> dict:
    """Train for ``max(marks)`` seconds (or iterations), writing ``<out>/<mark>s_<tag>.state_dict`` at each mark."""
    import torch

    from warp_drive.training.run.checkpoint import policy_file_state

    start = time.perf_counter()
    trainer = build_trainer(cfg)
    build_s = time.perf_counter() - start
    pending, snapshots = sorted(marks), []
    sync()
    start = time.perf_counter()
    while pending:
        trainer.train(1)
        sync()
        elapsed = time.perf_counter() - start
        progress = trainer.iteration if by_iterations else elapsed
        while pending and progress >= pending[0]:
            mark = pending.pop(0)
            out.mkdir(parents=True, exist_ok=True)
            for tag, policy in trainer.policies.items():
                torch.save({k: v.detach().cpu() for k, v in policy_file_state(policy.model).items()},
                           out / SNAPSHOT.format(mark=mark, tag=tag))
            steps = int(trainer.perf["steps"])
            snapshots.append({"mark_" + ("iterations" if by_iterations else "s"): mark, "elapsed_s": round(elapsed, 2),
                              "env_steps": steps})
            logger.info("ours: %d s, %.1f M env steps", mark, steps / 1e6)
    release(trainer)
    return {"build_s": round(build_s, 2), "snapshots": snapshots}


def train_reference(cfg: dict, marks: list[int], out: Path) -> dict:
    """The reference's own trainer in its own process (its import name is also ``warp_drive``)."""
    anchor = ROOT / ".device" / "anchor"
    if not Path(ANCHOR_SITE, "warp_drive").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target",
                        ANCHOR_SITE, *map(str, anchor.glob("*.whl"))], check=True)
    spec = {"config": cfg, "marks": marks, "out": str(out), "snapshot": SNAPSHOT}
    env = dict(os.environ, PYTHONPATH=f"{ANCHOR_SITE}:/tmp/site")
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("reference_tag_training.py")), json.dumps(spec)],
                          capture_output=True, text=True, env=env, cwd="/tmp", check=False, timeout=max(marks) + 240)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"the reference's run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


# ----------------------------------------------------------------------------- evaluation
class Evaluator:
    """One trainer of ours on the published config; loads any tagger and runner and plays, from the
    published config's own start state (as the published policies were trained) or, with
    ``fresh``, from a new start state per env and episode."""

    def __init__(self, num_envs: int = EVAL_ENVS, fresh: bool = False) -> None:
        self.fresh = fresh
        self.trainer = build_trainer(published_config(), num_envs, fresh=fresh)
        self.published = pretrained_dir()

    def load(self, tag: str, source: str | Path) -> None:
        """Puts ``source`` (a snapshot path, ``published-1e9`` or ``random``) into policy ``tag``."""
        import torch

        path = self.published / FILES[tag] if source in ("random", "published-1e9") else Path(source)
        self.trainer.load_model_checkpoint({tag: str(path)})
        if source == "random":  # zero heads: every action of every head has probability 1/n
            with torch.no_grad():
                for head in self.trainer.policies[tag].model.policy_heads:
                    head.weight.zero_()
                    head.bias.zero_()

    def tagged(self, tagger: str | Path, runner: str | Path, episodes: int = EVAL_EPISODES) -> dict:
        """Fraction of runners tagged per env-episode: mean, 95% half-width, n."""
        self.load("tagger", tagger)
        self.load("runner", runner)
        ret = self.trainer.evaluate(deterministic=False, num_episodes=episodes, random_baseline=False,
                                    fresh_starts=self.fresh)["runner"]["episode_return"]
        frac = (END_REWARD - np.asarray(ret, np.float64)) / (END_REWARD - TAG_PENALTY)
        if not np.isfinite(frac).all():
            raise RuntimeError("non-finite runner returns in evaluation")
        half = 1.96 * frac.std(ddof=1) / np.sqrt(len(frac))
        return {"mean": float(frac.mean()), "ci95": float(half), "n": int(len(frac))}

    def versus_published(self, folder: Path, mark: int) -> dict:
        """A snapshot's taggers against the published runners, and the published taggers against its runners."""
        return {"taggers_vs_published_runners": self.tagged(folder / SNAPSHOT.format(mark=mark, tag="tagger"),
                                                            "published-1e9"),
                "published_taggers_vs_runners": self.tagged("published-1e9",
                                                            folder / SNAPSHOT.format(mark=mark, tag="runner"))}


def curve(ev: Evaluator, run: dict, folder: Path) -> list[dict]:
    rows = []
    for snap in run["snapshots"]:
        rows.append({**snap, **ev.versus_published(folder, snap["mark_s"])})
        logger.info("%s %s s: %s", folder.name, snap["mark_s"], rows[-1])
    return rows


def source_path(source: str, tag: str) -> str | Path:
    if source in ("random", "published-1e9"):
        return source
    framework, budget = source.split("-")
    seconds = int(budget[:-3]) * 60 if budget.endswith("min") else int(budget.rstrip("s"))
    return SIDE / framework / SNAPSHOT.format(mark=seconds, tag=tag)


def crossplay(ev: Evaluator, sources: tuple[str, ...] = SOURCES) -> dict:
    matrix = {}
    for tagger in sources:
        for runner in sources:
            matrix[f"{tagger} | {runner}"] = ev.tagged(source_path(tagger, "tagger"), source_path(runner, "runner"))
            logger.info("taggers %s vs runners %s: %s", tagger, runner, matrix[f"{tagger} | {runner}"])
    return matrix


# ----------------------------------------------------------------------------- commands
def marks(budgets=BUDGETS, every: int = CURVE_EVERY) -> list[int]:
    return sorted(set(range(every, max(budgets) + 1, every)) | set(budgets))


def save(name: str, payload: dict) -> Path:
    from common import write_results

    return write_results(name, payload, RESULTS)


def copy_to_out(folder: Path) -> None:
    """One tar of a framework's snapshots and run.json into $OUT (the lending tool returns 8 files)."""
    if os.environ.get("OUT"):
        import tarfile

        out = Path(os.environ["OUT"])
        out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out / f"side_by_side_{folder.name}.tar", "w") as tar:
            tar.add(folder, arcname=folder.name)


def train_and_curve(framework: str, sources: tuple[str, ...] = SOURCES, budgets=BUDGETS,
                    every: int = CURVE_EVERY, overrides: list[str] = ()) -> None:
    """Train one framework for the budgets, evaluate its snapshots against the published policies,
    write ``<framework>/run.json``; if the other framework's run is there, finish (cross-play, JSON).
    ``overrides`` (ours only) change the chosen settings; the config in run.json records them."""
    cfg = ours_config(overrides) if framework == "ours" else published_config()
    train = train_ours if framework == "ours" else train_reference
    run = train(cfg, marks(budgets, every), SIDE / framework)
    ev = Evaluator()
    run["curve"] = curve(ev, run, SIDE / framework)
    fresh = Evaluator(fresh=True)
    run["versus_published_fresh_starts"] = {str(b): fresh.versus_published(SIDE / framework, b) for b in budgets}
    (SIDE / framework / "run.json").write_text(json.dumps({"config": cfg, **run}, indent=1))
    if (SIDE / ("reference" if framework == "ours" else "ours") / "run.json").is_file():
        finish(sources, budgets, ev, fresh)
    else:
        logger.info("the other framework's run is not there yet: run its command to finish")
    copy_to_out(SIDE / framework)


def finish(sources: tuple[str, ...] = SOURCES, budgets=BUDGETS, ev: Evaluator | None = None,
           fresh: Evaluator | None = None) -> None:
    """Both frameworks' ``run.json`` and snapshots are in ``SIDE``: play the cross-play matrices
    and write the results JSON."""
    runs = {name: json.loads((SIDE / name / "run.json").read_text()) for name in ("ours", "reference")}
    fresh_sources = (*(label(f, max(budgets)) for f in ("ours", "reference")), *FIXED_SOURCES)
    ev, fresh = ev or Evaluator(), fresh or Evaluator(fresh=True)
    payload = {"budgets_s": list(budgets), "seed": SEED, "env_seed": runs["ours"]["config"]["env"]["seed"],
               "eval": {"num_envs": EVAL_ENVS, "episodes_per_env": EVAL_EPISODES, "actions": "sampled"},
               **runs, "sources": list(sources), "crossplay": crossplay(ev, sources),
               "fresh_sources": list(fresh_sources), "crossplay_fresh_starts": crossplay(fresh, fresh_sources)}
    print("written", save("learning_side_by_side", payload))


def cmd_train(args) -> None:
    if args.override and args.command != "ours":
        raise SystemExit("--override changes this project's settings: use it with `ours`")
    train_and_curve(args.command, tuple(args.sources or default_sources(args.budgets)), args.budgets, args.curve_every,
                    args.override or [])


def cmd_crossplay(args) -> None:
    finish(tuple(args.sources or default_sources(args.budgets)), args.budgets)


def cmd_sweep(args) -> None:
    unknown = sorted(set(args.candidates) - set(SWEEP))
    if unknown:
        raise SystemExit(f"unknown candidates {unknown}; choose from {', '.join(SWEEP)}")
    ev = Evaluator(200)
    rows = {}
    for name in args.candidates or list(SWEEP):
        cfg = candidate_config(name)
        checkpoints = sorted({args.seconds // 2, args.seconds})
        run = train_ours(cfg, checkpoints, Path("/tmp/sweep") / name)
        score = {str(m): ev.versus_published(Path("/tmp/sweep") / name, m) for m in checkpoints}
        rows[name] = {"overrides": expand(SWEEP[name]), **run, "scores": score}
        print(name, json.dumps(score), flush=True)
    print("written", save("learning_sweep", {"seconds": args.seconds, "seed": SEED, "candidates": rows}))


def cmd_parity(args) -> None:
    """The chosen settings as they are and with ``--override``s (default: the bf16 update), for the
    same number of iterations (same seeds, same env steps): scores at half and full length, for each
    of ``--seeds`` (runs named ``as-is`` / ``changed``, with ``@<seed>`` when there are several), and
    with several seeds the mean of each score over them."""
    ev = Evaluator(200)
    marks = sorted({args.iterations // 2, args.iterations})
    seeds = args.seeds or [SEED]
    rows = {}
    for seed in seeds:
        for name, overrides in (("as-is", []), ("changed", args.override)):
            key = name if len(seeds) == 1 else f"{name}@{seed}"
            seeded = [f"trainer.seed={seed}", *overrides]
            run = train_ours(ours_config(seeded), marks, Path("/tmp/parity") / key, by_iterations=True)
            score = {str(m): ev.versus_published(Path("/tmp/parity") / key, m) for m in marks}
            rows[key] = {"overrides": overrides, "seed": seed, **run, "scores": score}
            print(key, json.dumps(run["snapshots"]), json.dumps(score), flush=True)
    payload = {"iterations": args.iterations, "seeds": seeds, "chosen": CHOSEN, "runs": rows}
    if len(seeds) > 1:
        payload["mean_over_seeds"] = {
            name: {str(m): {side: sum(rows[f"{name}@{s}"]["scores"][str(m)][side]["mean"] for s in seeds) / len(seeds)
                            for side in rows[f"{name}@{seeds[0]}"]["scores"][str(m)]} for m in marks}
            for name in ("as-is", "changed")}
        print("mean over seeds", json.dumps(payload["mean_over_seeds"]), flush=True)
    print("written", save("learning_parity", payload))


def cmd_refcheck(_args) -> None:
    """A 20-second run of the reference and its snapshot loaded here: the driver works."""
    run = train_reference(published_config(), [20], Path("/tmp/refcheck"))
    print("reference", json.dumps(run), json.dumps(Evaluator(200).versus_published(Path("/tmp/refcheck"), 20)))


def cmd_plot(_args) -> None:
    from plot_learning import plot_all

    for path in plot_all(RESULTS):
        print("written", path)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("ours", "reference"):
        sp = sub.add_parser(name, help=f"train {name} for the budgets, evaluate its snapshots; cross-play if both ran")
        sp.add_argument("--sources", nargs="+", default=None,
                        help="cross-play sources: <ours|reference>-<N>min or -<N>s (the snapshot at that time), "
                             "published-1e9, random (default: both frameworks at each budget, published, random)")
        sp.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS), help="seconds (default: 120 300)")
        sp.add_argument("--curve-every", type=int, default=CURVE_EVERY, help="seconds between curve snapshots")
        sp.add_argument("--override", action="append", default=None,
                        help="dotted override on top of the chosen settings (ours only; repeatable)")
        sp.set_defaults(fn=cmd_train)
    pa = sub.add_parser("parity", help="chosen settings vs the same with --override (default: bf16 update), equal iterations")
    pa.add_argument("--iterations", type=int, default=200)
    pa.add_argument("--seeds", nargs="+", type=int, default=None,
                    help=f"trainer seeds, each run both ways (default: {SEED})")
    pa.add_argument("--override", action="append", default=None,
                    help="dotted override of the changed run (repeatable; default: trainer.update_precision=bf16)")
    pa.set_defaults(fn=cmd_parity)
    cp = sub.add_parser("crossplay", help="cross-play and the results JSON from both frameworks' stored runs "
                                         "(side_by_side/<framework>/run.json and snapshots), without training")
    cp.add_argument("--sources", nargs="+", default=None, help="as for `ours`")
    cp.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS), help="seconds (default: 120 300)")
    cp.set_defaults(fn=cmd_crossplay)
    sub.add_parser("refcheck", help="20 s of the reference's trainer, its snapshot evaluated").set_defaults(fn=cmd_refcheck)
    sub.add_parser("plot", help="heatmap and curves from the results JSON").set_defaults(fn=cmd_plot)
    sw = sub.add_parser("sweep", help="score candidate Tag settings for a short budget each")
    sw.add_argument("--seconds", type=int, default=70)
    sw.add_argument("candidates", nargs="*", help=f"some of: {', '.join(SWEEP)} (default: all)")
    sw.set_defaults(fn=cmd_sweep)
    args = parser.parse_args(argv)
    if args.command == "parity" and not args.override:
        args.override = ["trainer.update_precision=bf16"]
    sys.path.insert(0, str(Path(__file__).parent))
    args.fn(args)


if __name__ == "__main__":
    main()
