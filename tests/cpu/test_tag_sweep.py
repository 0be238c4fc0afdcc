"""benchmarks/tag_sweep.py's pure parts: the job plan, the commands it runs, and the summary and
the mean and spread over seeds of the runs' scores (the runs themselves need a GPU: tests/gpu)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def sweep(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import tag_sweep

    yield tag_sweep
    sys.modules.pop("tag_sweep", None)


def _run(taggers: float, published: float, steps: int = 1000) -> dict:
    """A run.json as learning_side_by_side.py writes it, with one curve point per budget."""
    score = {"taggers_vs_published_runners": {"mean": taggers, "ci95": 0.01, "n": 800},
             "published_taggers_vs_runners": {"mean": published, "ci95": 0.01, "n": 800}}
    return {"curve": [{"mark_s": m, "elapsed_s": m, "env_steps": steps * m, **score} for m in (20, 40)],
            "versus_published_fresh_starts": {"20": score, "40": score}}


def test_plan_crosses_candidates_and_seeds_and_names_unknown_ones(sweep):
    assert sweep.plan(["chosen", "runner-lr3e-4"], [1, 2]) == [("chosen", 1), ("chosen", 2),
                                                               ("runner-lr3e-4", 1), ("runner-lr3e-4", 2)]
    with pytest.raises(SystemExit, match="tagger-huge"):
        sweep.plan(["chosen", "tagger-huge"], [1])


def test_command_seeds_the_trainer_and_passes_the_candidates_overrides(sweep):
    argv = sweep.command("runner-lr3e-4", 7, [20, 40])
    assert argv[1].endswith("learning_side_by_side.py") and argv[2] == "ours"
    assert argv[argv.index("--budgets") + 1:argv.index("--budgets") + 3] == ["20", "40"]
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "--override"]
    assert overrides == ["trainer.seed=7", "policy.runner.lr=0.0003"]


def test_aggregate_gives_mean_and_spread_over_seeds(sweep):
    runs = {"chosen": {1: sweep.summary(_run(0.70, 0.40)), 2: sweep.summary(_run(0.74, 0.44)), 3: None},
            "single": {1: sweep.summary(_run(0.5, 0.9, steps=10))}}
    out = sweep.aggregate(runs, budget=40)
    row = out["chosen"]
    assert row["seeds"] == 2  # the failed run (None) is left out
    assert row["published_start:taggers_vs_published_runners"]["mean"] == pytest.approx(0.72)
    assert row["fresh:published_taggers_vs_runners"]["std"] == pytest.approx(0.04 / 2 ** 0.5)
    assert row["env_steps"] == 40000
    assert out["single"]["fresh:taggers_vs_published_runners"] == {"mean": 0.5, "std": None}


def test_run_jobs_gives_each_job_a_gpu_and_gathers_runs_and_failures(sweep, tmp_path, monkeypatch):
    """The jobs' command stood in for by a script that writes a run.json (or fails, for seed 3) and
    records the GPU it was given."""
    script = (
        "import json, os, sys, pathlib\n"
        "seed = int(sys.argv[1])\n"
        "if seed == 3: sys.exit(1)\n"
        "out = pathlib.Path(os.environ['WARP_DRIVE_BENCH_RESULTS']) / 'side_by_side' / 'ours'\n"
        "out.mkdir(parents=True)\n"
        f"run = {_run(0.7, 0.4)!r}\n"
        "run['gpu'] = os.environ['CUDA_VISIBLE_DEVICES']\n"
        "(out / 'run.json').write_text(json.dumps(run))\n")
    monkeypatch.setattr(sweep, "command", lambda cand, seed, budgets: [sys.executable, "-c", script, str(seed)])
    monkeypatch.setattr(sweep.time, "sleep", lambda s: None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    runs = sweep.run_jobs(sweep.plan(["chosen"], [1, 2, 3]), 2, [20, 40], tmp_path)
    assert set(runs["chosen"]) == {1, 2, 3} and runs["chosen"][3] is None
    assert runs["chosen"][1]["curve"][-1]["taggers_vs_published_runners"] == 0.7
    written = [tmp_path / f"chosen@{s}" / "side_by_side" / "ours" / "run.json" for s in (1, 2)]
    gpus = {json.loads(p.read_text())["gpu"] for p in written}
    assert gpus == {"0", "1"}  # the first two jobs started together, one on each GPU


def test_jobs_go_to_the_gpus_cuda_visible_devices_names(sweep, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert sweep.gpu_ids(2) == ["2", "3"] and sweep.gpu_ids(1) == ["2"]
    with pytest.raises(SystemExit, match="at most 2"):
        sweep.gpu_ids(4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert sweep.gpu_ids(3) == ["0", "1", "2"]


def test_the_documented_commands_parse(sweep):
    """The documented (README, docs/results.md) and the docstring's commands name known candidates and integer seeds (``--seeds``
    takes every number after it, so the candidates come first)."""
    from tests.cpu.test_docs_commands import commands_for

    documented = [line.strip() for line in sweep.__doc__.splitlines() if "tag_sweep.py" in line and "python" in line]
    documented += sorted(set(commands_for("gpu:test_tag_sweep_command_runs")))  # README and docs/results.md: one line
    assert len(documented) == 2
    for command in documented:
        args = sweep.parse_args(shlex.split(command)[2:])
        assert sweep.plan(args.candidates, args.seeds) and args.gpus == 4 and args.seeds == [1234, 4321]
