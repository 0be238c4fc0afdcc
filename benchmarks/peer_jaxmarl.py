"""JaxMARL's own IPPO / MAPPO baselines on ``MPE_simple_spread_v3`` (issue 38 item 4, the peer's half).

Runs the peer's scripts *unchanged*: the script file from a JaxMARL checkout (``baselines/``) is loaded
with :mod:`importlib`, its published YAML config is read with OmegaConf, and its own ``make_train(config)``
is jitted and called, as the script's ``main`` does. The only changes are to logging and seeds:

- ``wandb`` is replaced by an in-process stub (their ``main`` starts it with ``WANDB_MODE: disabled``
  anyway); the stub keeps what the script logs each update (the RNN scripts return no metrics, their
  only per-update output is the ``wandb.log`` inside an ``io_callback``);
- ``jax.experimental.io_callback`` is wrapped so the same per-update metric dict the script hands to
  its callback is also read here (logging only: the callback still runs, the jitted program is the same);
- ``SEED`` / ``NUM_SEEDS`` (and, only where stated in the results, ``TOTAL_TIMESTEPS``) are overridden.

Scripts (the peer's registry, ``baselines/run_minimal_baseline_set.py``, for the ``mpe`` suite):

============  ===================================  ================================================
``--algo``    script                               config
============  ===================================  ================================================
ippo_ff       baselines/IPPO/ippo_ff_mpe.py        baselines/IPPO/config/ippo_ff_mpe.yaml
ippo_rnn      baselines/IPPO/ippo_rnn_mpe.py       baselines/IPPO/config/ippo_rnn_mpe.yaml
mappo_rnn     baselines/MAPPO/mappo_rnn_mpe.py     baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml
============  ===================================  ================================================

(JaxMARL has no feed-forward MAPPO for MPE.) Seeds as the peer runs them: ``ippo_ff``'s ``main`` vmaps
``NUM_SEEDS`` keys split from ``PRNGKey(SEED)``, so this driver does that with ``NUM_SEEDS = --seeds``;
the RNN scripts' ``main`` trains one ``PRNGKey(SEED)``, and the peer's multi-seed launcher runs
``SEED = seed + i`` one after another, so this driver does that (one compile, reused for each seed).

Return: every curve here uses one definition for all three scripts, the one ``ippo_ff`` returns in
``out["metrics"]``: per update, the mean over the rollout's steps and actors of
``returned_episode_returns`` (each actor's last finished episode return, held until the next one ends).
``MPELogWrapper`` multiplies each agent's reward by the number of agents before summing it over the
episode, so for simple spread (3 agents) one actor's value is 3x its own episode return and the mean
over the 3 agents equals the *sum over agents* of the per-agent episode returns (26 steps, see
``docs/peers/jaxmarl_simple_spread.md``). The RNN scripts' own logged ``returns`` (a different average
of the same quantity) are kept beside it (``script_logged_returns``).

Usage (CPU: a virtualenv with ``jax[cpu]``, ``jaxmarl`` and the baselines' dependencies; GPU: see
``tools/stage_jaxmarl_wheels.sh``)::

    JAXMARL_SRC=/path/to/JaxMARL python benchmarks/peer_jaxmarl.py --algo ippo_ff --seeds 3
    python benchmarks/peer_jaxmarl.py --algo mappo_rnn --seeds 3 --total-timesteps 2e6   # a stated reduction
    python benchmarks/peer_jaxmarl.py --plot benchmarks/results/jaxmarl_simple_spread_cpu.png \\
        benchmarks/results/jaxmarl_*_simple_spread_cpu.json                              # no JAX needed
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cpu_model  # noqa: E402  (torch-free: this driver runs in a JAX interpreter)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_NAME = "MPE_simple_spread_v3"

#: algo -> (script, config file), relative to the JaxMARL checkout.
SCRIPTS: dict[str, tuple[str, str]] = {
    "ippo_ff": ("baselines/IPPO/ippo_ff_mpe.py", "baselines/IPPO/config/ippo_ff_mpe.yaml"),
    "ippo_rnn": ("baselines/IPPO/ippo_rnn_mpe.py", "baselines/IPPO/config/ippo_rnn_mpe.yaml"),
    "mappo_rnn": ("baselines/MAPPO/mappo_rnn_mpe.py", "baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml"),
}
VMAPPED = {"ippo_ff"}  # scripts whose own main vmaps NUM_SEEDS seeds
FINAL_FRACTION = 0.05  # final return: mean over the last 5% of updates
MAX_POINTS = 200


# --------------------------------------------------------------------------- machine / versions
def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 0


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "jaxmarl", "flax", "optax", "distrax", "chex", "gymnax", "numpy",
                 "omegaconf", "hydra-core", "tfp-nightly", "tensorflow-probability",
                 "jax-cuda13-plugin", "jax-cuda12-plugin"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def jaxmarl_commit(src: Path) -> str:
    """The checkout's commit: ``$JAXMARL_COMMIT``, else ``<src>/COMMIT`` (staged copies), else git."""
    if os.environ.get("JAXMARL_COMMIT"):
        return os.environ["JAXMARL_COMMIT"]
    if (src / "COMMIT").is_file():
        return (src / "COMMIT").read_text().strip()
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True,
                              check=False).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


# --------------------------------------------------------------------------- logging-only shims
class WandbStub(types.ModuleType):
    """Stands in for ``wandb``: ``init`` records its arguments, ``log`` appends the dict it is given."""

    def __init__(self) -> None:
        super().__init__("wandb")
        self.logged: list[dict[str, Any]] = []
        self.init_kwargs: dict[str, Any] = {}
        self.plot = types.SimpleNamespace(line=lambda *a, **k: None)
        self.run = None

    def init(self, **kwargs: Any) -> None:
        self.init_kwargs = kwargs

    def log(self, data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        self.logged.append(_to_py(data))

    def finish(self, *args: Any, **kwargs: Any) -> None:
        pass

    def Table(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802 - wandb's name
        return None


def _to_py(tree: Any) -> Any:
    import numpy as np

    if isinstance(tree, dict):
        return {k: _to_py(v) for k, v in tree.items()}
    arr = np.asarray(tree)
    return float(arr) if arr.ndim == 0 else arr.tolist()


class CallbackTap:
    """Wraps ``jax.experimental.io_callback``: the peer's callback still runs; ``record`` sees its args."""

    def __init__(self) -> None:
        self.active = False
        self.rows: list[dict[str, float]] = []

    def install(self) -> None:
        import jax.experimental

        original = jax.experimental.io_callback
        tap = self

        def io_callback(callback: Callable, result_shape: Any, *args: Any, **kwargs: Any) -> Any:
            def both(*cb_args: Any, **cb_kwargs: Any) -> Any:
                if tap.active:
                    tap.record(*cb_args, **cb_kwargs)
                return callback(*cb_args, **cb_kwargs)

            return original(both, result_shape, *args, **kwargs)

        jax.experimental.io_callback = io_callback

    def record(self, metric: Any, *_: Any, **__: Any) -> None:
        import numpy as np

        if not isinstance(metric, dict) or "returned_episode_returns" not in metric:
            return
        ret = np.asarray(metric["returned_episode_returns"], dtype=np.float64)
        done = np.asarray(metric["returned_episode"], dtype=bool)
        lengths = np.asarray(metric["returned_episode_lengths"], dtype=np.float64)
        self.rows.append({
            "update": int(np.asarray(metric["update_steps"])),
            "return": float(ret.mean()),  # ippo_ff's definition: mean over steps and actors
            "episodes_finished": int(done.sum()),
            "episode_length": float(lengths[done].mean()) if done.any() else float("nan"),
        })


# --------------------------------------------------------------------------- running the peer
def load_script(src: Path, algo: str) -> types.ModuleType:
    script = src / SCRIPTS[algo][0]
    spec = importlib.util.spec_from_file_location(f"jaxmarl_peer_{algo}", script)
    assert spec is not None and spec.loader is not None, script
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def published_config(src: Path, algo: str) -> dict[str, Any]:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(src / SCRIPTS[algo][1]))  # type: ignore[return-value]


def env_probe() -> dict[str, Any]:
    """Episode length and return scale of the peer's env, measured through its own ``MPELogWrapper``."""
    import jax
    import jax.numpy as jnp
    import jaxmarl
    from jaxmarl.wrappers.baselines import MPELogWrapper

    base = jaxmarl.make(ENV_NAME)
    env = MPELogWrapper(base)
    key = jax.random.PRNGKey(0)
    obs, state = env.reset(key)
    step = jax.jit(env.step)
    own = jnp.zeros(base.num_agents)
    done_at, logged, summed = [], None, None
    for t in range(1, 80):
        key, k_act, k_step = jax.random.split(key, 3)
        ks = jax.random.split(k_act, base.num_agents)
        act = {a: base.action_space(a).sample(ks[i]) for i, a in enumerate(base.agents)}
        obs, state, rew, done, info = step(k_step, state, act)
        own = own + jnp.stack([rew[a] for a in base.agents])
        if bool(done["__all__"]):
            done_at.append(t)
            if logged is None:
                logged = [float(x) for x in info["returned_episode_returns"]]
                summed = [float(x) for x in own]
            own = jnp.zeros(base.num_agents)
    assert logged is not None and summed is not None
    lengths = [done_at[0]] + [b - a for a, b in zip(done_at, done_at[1:])]
    return {
        "num_agents": base.num_agents,
        "max_steps_attribute": int(base.max_steps),
        "local_ratio": float(base.local_ratio),
        "action_space": f"Discrete({base.action_space(base.agents[0]).n})",
        "observation_shape": list(base.observation_space(base.agents[0]).shape),
        "episode_lengths_seen": lengths,
        "first_episode_per_agent_reward_sum": summed,
        "first_episode_logged_returned_episode_returns": logged,
        "logged_over_own_sum": [l / s for l, s in zip(logged, summed)],
        "mean_over_agents_of_logged": sum(logged) / len(logged),
        "sum_over_agents_of_own": sum(summed),
    }


def bin_curve(returns: list[float], steps_per_update: int, points: int = MAX_POINTS) -> dict[str, list]:
    """At most ``points`` points: consecutive updates averaged; x = env steps at the bin's last update."""
    n = len(returns)
    size = max(1, math.ceil(n / points))
    xs, ys = [], []
    for start in range(0, n, size):
        chunk = returns[start:start + size]
        xs.append((start + len(chunk)) * steps_per_update)
        ys.append(sum(chunk) / len(chunk))
    return {"env_steps": xs, "mean_episode_return": ys, "updates_per_point": size}


def final_return(returns: list[float]) -> tuple[float, int]:
    k = max(1, math.ceil(FINAL_FRACTION * len(returns)))
    return sum(returns[-k:]) / k, k


def _split_by_seed(rows: list[dict], logged: list[dict], seeds: int, num_updates: int) -> list[tuple[list, list]]:
    """The tapped callback rows (and the stub's wandb.log dicts, one per row, same order) per seed, sorted
    by update. Seeds run one at a time here (``seeds=1``): vmapping the RNN scripts' trains over seeds
    hung on the CPU (jax 0.10.2; their callback under vmap), so they run as their main runs them."""
    assert len(rows) == len(logged) == seeds * num_updates, (len(rows), len(logged), seeds, num_updates)
    out: list[tuple[list, list]] = [([], []) for _ in range(seeds)]
    seen: dict[int, int] = {}
    for row, own in zip(rows, logged):
        i = seen.get(row["update"], 0)
        seen[row["update"]] = i + 1
        out[i][0].append(row)
        out[i][1].append(own)
    for r, o in out:
        order = sorted(range(len(r)), key=lambda j: r[j]["update"])
        r[:] = [r[j] for j in order]
        o[:] = [o[j] for j in order]
        assert [x["update"] for x in r] == list(range(num_updates)), "missing updates"
    return out


def _rnn_seed_result(seed: int, rows: list[dict], own_logged: list[dict], steps_per_update: int) -> dict:
    curve = [r["return"] for r in rows]
    own = [float(d["returns"]) for d in own_logged]
    fin, k = final_return(curve)
    own_fin, _ = final_return([x for x in own if not math.isnan(x)] or [float("nan")])
    lengths = [r["episode_length"] for r in rows[-k:] if not math.isnan(r["episode_length"])]
    return {"seed": seed, "rng": f"PRNGKey({seed})", "final_return": fin,
            "script_logged_final_return": own_fin,
            "curve": bin_curve(curve, steps_per_update),
            "script_logged_returns": bin_curve(own, steps_per_update),
            "episode_length_last_updates": sum(lengths) / max(1, len(lengths))}


def run(args: argparse.Namespace) -> Path:
    src = Path(args.jaxmarl_src).resolve()
    wandb = WandbStub()
    sys.modules["wandb"] = wandb
    tap = CallbackTap()
    tap.install()

    import jax
    import numpy as np

    t_import = time.perf_counter()
    module = load_script(src, args.algo)
    published = published_config(src, args.algo)
    config = dict(published)
    overrides: dict[str, Any] = {"WANDB_MODE": "disabled"}
    if args.algo in VMAPPED:
        overrides["NUM_SEEDS"] = args.seeds
    else:
        overrides["NUM_SEEDS"] = 1
    if args.seed is not None:
        overrides["SEED"] = args.seed
    if args.total_timesteps is not None:
        overrides["TOTAL_TIMESTEPS"] = float(args.total_timesteps)
    config.update(overrides)
    base_seed = int(config["SEED"])
    steps_per_update = int(config["NUM_STEPS"]) * int(config["NUM_ENVS"])

    print(f"[peer_jaxmarl] {args.algo}: {SCRIPTS[args.algo][0]}, jax {jax.__version__} on "
          f"{jax.devices()[0].device_kind}, TOTAL_TIMESTEPS={config['TOTAL_TIMESTEPS']:.3g}", flush=True)
    probe = env_probe()
    print(f"[peer_jaxmarl] env probe: episode lengths {probe['episode_lengths_seen']}", flush=True)

    per_seed: list[dict[str, Any]] = []
    timing: dict[str, Any] = {}
    cfg = dict(config)  # make_train adds derived keys (NUM_UPDATES, ...) to the dict it is given
    t0 = time.perf_counter()
    train = module.make_train(cfg)
    if args.algo in VMAPPED:
        # what the script's main runs: jax.vmap(jax.jit(make_train(config)))(split(PRNGKey(SEED), NUM_SEEDS));
        # the outer jit only lets compile and run be timed apart (same program)
        rngs = jax.random.split(jax.random.PRNGKey(base_seed), args.seeds)
        fn = jax.jit(jax.vmap(jax.jit(train)))
        compiled = fn.lower(rngs).compile()
        t1 = time.perf_counter()
        out = compiled(rngs)
        rets = np.asarray(jax.block_until_ready(out["metrics"]["returned_episode_returns"]))
        t2 = time.perf_counter()
        lens = np.asarray(out["metrics"]["returned_episode_lengths"])
        timing = {"compile_s": t1 - t0, "run_s": t2 - t1, "total_s": t2 - t0,
                  "note": "all seeds in one vmapped program, as the script's main runs them"}
        rets = rets.reshape(args.seeds, rets.shape[1], -1).mean(axis=-1)  # [seed, update]
        for i in range(args.seeds):
            curve = [float(x) for x in rets[i]]
            fin, k = final_return(curve)
            per_seed.append({"seed_index": i, "rng": f"jax.random.split(PRNGKey({base_seed}), {args.seeds})[{i}]",
                             "final_return": fin, "curve": bin_curve(curve, steps_per_update),
                             "episode_length_last_update": float(lens[i, -1].mean())})
    else:
        rng0 = jax.random.PRNGKey(base_seed)
        compiled = jax.jit(train).lower(rng0).compile()
        t1 = time.perf_counter()
        timing = {"compile_s": t1 - t0, "run_s_per_seed": [], "note": "one compile, seeds run one after another"}
        for i in range(args.seeds):
            seed = base_seed + i
            tap.rows, wandb.logged = [], []
            tap.active = True
            ts = time.perf_counter()
            out = compiled(jax.random.PRNGKey(seed))
            jax.block_until_ready(out)
            jax.effects_barrier()
            timing["run_s_per_seed"].append(time.perf_counter() - ts)
            tap.active = False
            (rows, own), = _split_by_seed(tap.rows, wandb.logged, 1, int(cfg["NUM_UPDATES"]))
            per_seed.append(_rnn_seed_result(seed, rows, own, steps_per_update))
            print(f"[peer_jaxmarl] seed {seed}: final {per_seed[-1]['final_return']:.2f} "
                  f"({timing['run_s_per_seed'][-1]:.1f}s)", flush=True)
        timing["run_s"] = sum(timing["run_s_per_seed"])
        timing["total_s"] = timing["compile_s"] + timing["run_s"]
    timing["import_and_env_probe_s"] = t0 - t_import

    num_updates = int(cfg["NUM_UPDATES"])
    finals = [s["final_return"] for s in per_seed]
    published_steps = float(published["TOTAL_TIMESTEPS"])
    used_steps = float(config["TOTAL_TIMESTEPS"])
    device = jax.devices()[0]
    tag = args.tag or ("cpu" if device.platform == "cpu" else re.sub(r"\W+", "_", device.device_kind))
    doc = {
        "benchmark": "peer_jaxmarl",
        "algo": args.algo,
        "env": ENV_NAME,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "peer": {
            "repository": "FLAIROx/JaxMARL",
            "baselines_commit": jaxmarl_commit(src),
            "script": SCRIPTS[args.algo][0],
            "config_file": SCRIPTS[args.algo][1],
            "jaxmarl_version": versions().get("jaxmarl", "unknown"),
            "jaxmarl_package_path": str(Path(sys.modules["jaxmarl"].__file__).parent),
            "run_unchanged": "script loaded as a module, its make_train(config) jitted and called as its main "
                             "does; wandb stubbed and io_callback tapped for logging; SEED/NUM_SEEDS set",
        },
        "versions": versions(),
        "machine": {"cpu_model": cpu_model(), "cpu_cores": cpu_cores(), "jax_backend": device.platform,
                    "jax_device": device.device_kind, "hostname_kind": platform.machine()},
        "config_published": published,
        "config_overrides": overrides,
        "config_used": {k: v for k, v in cfg.items()},
        "reduction": {
            "published_total_timesteps": published_steps,
            "used_total_timesteps": used_steps,
            "fraction_of_published": used_steps / published_steps,
            "is_reduced": used_steps < published_steps,
        },
        "env_steps": {"per_update": steps_per_update, "num_updates": num_updates,
                      "total": num_updates * steps_per_update,
                      "unit": "vectorised env steps (NUM_ENVS x NUM_STEPS per update); each is one step "
                              f"of all {probe['num_agents']} agents"},
        "return_definition": (
            "per update: mean over the rollout's NUM_STEPS x NUM_ACTORS of info['returned_episode_returns'] "
            "(MPELogWrapper: each actor's last finished episode return, its rewards x num_agents), i.e. the "
            "sum over the 3 agents of their per-agent episode returns (26-step episodes); ippo_ff's "
            "out['metrics'] definition, read from the io_callback metric for the RNN scripts"),
        "final_return_definition": f"mean over the last {FINAL_FRACTION:.0%} of updates "
                                   f"({max(1, math.ceil(FINAL_FRACTION * num_updates))} of {num_updates})",
        "seeds": [s.get("seed", s.get("rng")) for s in per_seed],
        "final_return_per_seed": finals,
        "final_return_mean": sum(finals) / len(finals),
        "wall_clock": timing,
        "env_probe": probe,
        "per_seed": per_seed,
        "command": " ".join(shlex.quote(a) for a in ["python", *sys.argv]),
        "command_env": {k: os.environ[k] for k in ("JAXMARL_SRC", "JAXMARL_COMMIT", "JAX_PLATFORMS", "XLA_FLAGS")
                        if k in os.environ},
    }
    out_path = Path(args.out) if args.out else RESULTS / f"jaxmarl_{args.algo}_simple_spread_{tag}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    if os.environ.get("OUT"):
        (Path(os.environ["OUT"]) / out_path.name).write_text(out_path.read_text())
    print(f"[peer_jaxmarl] {args.algo}: final returns {['%.2f' % f for f in finals]}, "
          f"compile {timing['compile_s']:.1f}s, run {timing['run_s']:.1f}s -> {out_path}", flush=True)
    return out_path


# --------------------------------------------------------------------------- plot (no JAX needed)
LABELS = {"ippo_ff": "IPPO (FF)", "ippo_rnn": "IPPO (GRU)", "mappo_rnn": "MAPPO (GRU)"}


def plot(png: Path, files: list[Path]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.2))
    title_bits = set()
    for f in files:
        doc = json.loads(Path(f).read_text())
        curves = [s["curve"] for s in doc["per_seed"]]
        x = np.asarray(curves[0]["env_steps"], dtype=float)
        ys = np.asarray([c["mean_episode_return"] for c in curves], dtype=float)
        red = doc["reduction"]
        label = f"{LABELS.get(doc['algo'], doc['algo'])}, {len(curves)} seeds, final {doc['final_return_mean']:.1f}"
        if red["is_reduced"]:
            label += f" ({red['used_total_timesteps']:.2g} of {red['published_total_timesteps']:.2g} steps)"
        (line,) = ax.plot(x, ys.mean(axis=0), label=label)
        ax.fill_between(x, ys.min(axis=0), ys.max(axis=0), color=line.get_color(), alpha=0.2)
        title_bits.add(f"jax {doc['versions'].get('jax')}, {doc['machine']['jax_device']}")
    ax.set_xlabel("env steps (vectorised; each moves all 3 agents)")
    ax.set_ylabel("episode return (sum over agents, 26 steps)")
    ax.set_title(f"JaxMARL baselines, MPE_simple_spread_v3 ({'; '.join(sorted(title_bits))})", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.text(0.01, 0.01, "mean over seeds, shaded: min-max", fontsize=7)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    return png


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algo", choices=sorted(SCRIPTS))
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (default 3)")
    p.add_argument("--seed", type=int, default=None, help="base SEED (default: the published config's)")
    p.add_argument("--total-timesteps", type=float, default=None,
                   help="override TOTAL_TIMESTEPS (a reduction from the published config; recorded)")
    p.add_argument("--jaxmarl-src", default=os.environ.get("JAXMARL_SRC", str(ROOT / ".device" / "jaxmarl" / "src")),
                   help="JaxMARL checkout holding baselines/ (default $JAXMARL_SRC, else .device/jaxmarl/src)")
    p.add_argument("--tag", default=None, help="results file suffix (default: cpu, or the GPU's name)")
    p.add_argument("--out", default=None, help="results file (default benchmarks/results/jaxmarl_<algo>_simple_spread_<tag>.json)")
    p.add_argument("--plot", nargs="+", metavar=("PNG", "JSON"), help="plot PNG from results JSON files and exit")
    args = p.parse_args(argv)
    if args.plot:
        print(plot(Path(args.plot[0]), [Path(f) for f in args.plot[1:]]))
        return
    if not args.algo:
        p.error("--algo is required (or --plot)")
    run(args)


if __name__ == "__main__":
    main()
