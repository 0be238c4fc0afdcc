"""benchmarks/bench_time_to_policy.py on the CPU: the timed loop finds the first evaluation at or above the
threshold and keeps evaluation time out of training seconds (a scripted clock), the command writes its JSON
schema and table on a tiny budget, and every fast run config (``warp_drive/training/run_configs/*_fast.yaml``)
loads and trains."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


@pytest.fixture()
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_time_to_policy as mod

    yield mod
    sys.modules.pop("bench_time_to_policy", None)


class ScriptedClock:
    """A clock that moves only when told: each training iteration takes ``iteration_s``, each evaluation ``eval_s``."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def scripted(returns: list[float], iteration_s: float = 0.1, eval_s: float = 7.0, steps: int = 1000):
    clock = ScriptedClock()
    done = {"iterations": 0, "evals": 0}

    def train_one() -> int:
        clock.now += iteration_s
        done["iterations"] += 1
        return done["iterations"] * steps

    def evaluate() -> float:
        clock.now += eval_s
        value = returns[min(done["evals"], len(returns) - 1)]
        done["evals"] += 1
        return value

    return clock, train_one, evaluate, done


def test_threshold_is_the_first_evaluation_at_or_above_it_and_evaluations_are_not_training(bench):
    clock, train_one, evaluate, done = scripted([10.0, 60.0, 99.9, 100.0, 50.0, 120.0])
    run = bench.time_to_threshold(train_one, evaluate, 100.0, budget_s=100.0, eval_every_iters=2, clock=clock)
    # evaluations after iterations 1, 2, 4, 6: the fourth (iteration 6) returns 100.0 = the threshold
    assert run.reached and run.stopped == "threshold"
    assert run.iterations_to_threshold == 6 and run.env_steps_to_threshold == 6000
    assert run.seconds_to_threshold == pytest.approx(0.6)  # 6 iterations of 0.1 s; 4 x 7 s of evaluation left out
    assert run.eval_seconds == pytest.approx(28.0) and run.evals == 4 == done["evals"]
    assert run.final_return == 100.0 and run.first_iteration_s == pytest.approx(0.1)
    assert [c[0] for c in run.curve] == [1, 2, 4, 6]


def test_full_budget_keeps_training_after_the_threshold_and_keeps_the_first_crossing(bench):
    clock, train_one, evaluate, _ = scripted([100.0, 10.0, 20.0])
    run = bench.time_to_threshold(train_one, evaluate, 100.0, budget_s=0.55, eval_every_iters=2,
                                  stop_at_threshold=False, clock=clock)
    assert run.reached and run.iterations_to_threshold == 1 and run.seconds_to_threshold == pytest.approx(0.1)
    assert run.stopped == "budget" and run.iterations == 6 and run.final_return == 20.0  # the last evaluation


def test_a_run_that_never_reaches_the_threshold_stops_at_the_budget_with_a_final_evaluation(bench):
    clock, train_one, evaluate, _ = scripted([1.0, 2.0, 3.0, 4.0, 5.0], iteration_s=0.125)  # exact in binary
    run = bench.time_to_threshold(train_one, evaluate, 100.0, budget_s=1.25, eval_interval_s=0.375, clock=clock)
    assert not run.reached and run.seconds_to_threshold is None and run.env_steps_to_threshold is None
    assert run.stopped == "budget" and run.iterations == 10 and run.train_seconds == 1.25
    # after iteration 1, then every 0.375 s (3 iterations) of training: 4, 7, 10 (the last is also the budget's end)
    assert [c[0] for c in run.curve] == [1, 4, 7, 10] and run.final_return == 4.0
    with pytest.raises(ValueError, match="exactly one"):
        bench.time_to_threshold(train_one, evaluate, 1.0, 1.0, clock=clock)


def test_the_command_writes_its_schema_and_detects_the_threshold_on_a_short_cpu_run(bench, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OUT", raising=False)
    fast = bench.TARGETS["cartpole"]
    # the real config, a target every greedy policy meets (return >= 1; a time target no loaded CI box misses: it
    # stops at the threshold after one iteration) and one none can (return > 500, within a 0.4 s budget)
    monkeypatch.setattr(bench, "TARGETS", {"cartpole": bench.Target(fast.env, fast.config, fast.gym_id, 1.0, 60.0),
                                           "acrobot": bench.Target(fast.env, fast.config, fast.gym_id, 501.0, 0.4)})
    small = ["trainer.num_envs=16", "trainer.train_batch_size=128", "env.episode_length=50"]
    rc = bench.main(["--configs", "cartpole", "acrobot", "--seeds", "3", "--device", "cpu", "--eval-envs", "4",
                     "--max-seconds-factor", "1", "--warmup-iters", "1", "--results-dir", str(tmp_path), "--set", *small])
    assert rc == 0
    doc = json.loads((tmp_path / "time_to_policy_cpu.json").read_text())
    assert doc["benchmark"] == "time_to_policy" and {"commit", "date", "nvidia_driver"} <= set(doc["environment"])
    assert doc["device"] == "cpu" and doc["seeds"] == [3] and "untimed" in doc["warm_up"]
    easy, hard = doc["rows"]
    keys = {"config", "seed", "run_config", "algorithm", "target_return", "target_seconds", "met", "reached",
            "seconds_to_threshold", "env_steps_to_threshold", "iterations_to_threshold", "final_return",
            "train_seconds", "env_steps", "iterations", "eval_seconds", "evals", "first_iteration_s", "build_s",
            "warmup_s", "curve", "budget_s", "stopped"}
    assert keys <= set(easy) and keys <= set(hard)
    assert easy["run_config"] == "single_cartpole_fast" and easy["num_envs"] == 16 and easy["warmup_s"] > 0
    assert easy["reached"] and easy["met"] and easy["stopped"] == "threshold"
    assert easy["iterations_to_threshold"] == 1 and easy["env_steps_to_threshold"] == 128
    assert easy["seconds_to_threshold"] == pytest.approx(easy["first_iteration_s"])
    assert not hard["reached"] and not hard["met"] and hard["stopped"] == "budget" and hard["seconds_to_threshold"] is None
    assert hard["train_seconds"] >= 0.4 and hard["final_return"] <= 50
    assert doc["summary"]["cartpole"]["seeds_met"] == 1 and doc["summary"]["acrobot"]["seeds_reached"] == 0
    out = capsys.readouterr().out
    assert "s to threshold" in out and "cartpole  3" in out and "acrobot   3" in out and "results:" in out


FAST = sorted(p.stem for p in (ROOT / "warp_drive" / "training" / "run_configs").glob("*_fast.yaml"))


def test_every_benchmark_target_has_a_shipped_fast_config(bench):
    assert sorted(t.config for t in bench.TARGETS.values()) == FAST and len(FAST) == 5


@pytest.mark.parametrize("name", FAST)
def test_each_fast_config_loads_resolves_and_trains_two_iterations_on_the_cpu(name, tmp_path):
    from warp_drive.cli.setup_and_train import run_config_path
    from warp_drive.config import load_run_config
    from warp_drive.training.run.build import build_trainer
    from warp_drive.training.setup_and_train import env_class_for

    config = load_run_config(run_config_path(name), ["trainer.env_backend=cpu", f"saving.basedir={tmp_path}",
                                                     "trainer.seed=1"])
    assert config.name == name == config.saving.name
    assert config.trainer.num_iterations(config.env["episode_length"]) >= 100  # a run long enough to reach the target
    trainer = build_trainer(config, env_class_for(name), backend="cpu", results_dir=str(tmp_path / "run"), verbose=False)
    trainer.handle_signals = False
    trainer.train(2)
    assert trainer.engine.iteration == 2 and trainer.engine.perf["steps"] == 2 * config.trainer.train_batch_size


def test_the_tag_row_plays_against_published_policies_on_a_tiny_cpu_config(bench, tmp_path, monkeypatch, capsys):
    """The Tag path at a tiny size: stand-in "published" policies of a tiny config (CI has no copy of the real
    ones), our settings trained for a second, scored against them from both sides at each evaluation."""
    from tests.cpu.test_learning_side_by_side import stand_in_published_policies

    monkeypatch.delenv("OUT", raising=False)
    import learning_side_by_side as lsbs

    stand_in_published_policies(lsbs, tmp_path, monkeypatch)
    monkeypatch.setattr(bench, "TAG_SECONDS", 1.0)
    small = ["trainer.num_envs=4", "trainer.train_batch_size=40", "policy.tagger.model.fc_dims=[8,8]",
             "policy.runner.model.fc_dims=[8,8]", "policy.tagger.num_minibatches=1", "policy.runner.num_minibatches=1"]
    try:
        assert bench.main(["--configs", "tag", "--seeds", "5", "--device", "cpu", "--tag-eval-every-s", "0.4",
                           "--tag-eval-envs", "4", "--full-budget", "--max-seconds-factor", "1.5", "--results-dir", str(tmp_path), "--tag-set", *small]) == 0
    finally:
        sys.modules.pop("learning_side_by_side", None)
    (row,) = json.loads((tmp_path / "time_to_policy_cpu.json").read_text())["rows"]
    assert row["config"] == "tag" and row["stopped"] == "budget" and row["train_seconds"] >= 1.5
    assert row["evals"] == len(row["scores"]) == len(row["curve"]) >= 2
    bar = row["published_vs_published"]["mean"]
    margins = []
    for score, point in zip(row["scores"], row["curve"]):
        margin = min(score["taggers_vs_published_runners"]["mean"] - bar, bar - score["published_taggers_vs_runners"]["mean"])
        assert point[3] == pytest.approx(margin, abs=1e-3)  # the curve's value: the smaller of the two margins
        margins.append(margin)
    # the threshold reads the unrounded margin (the curve keeps 3 decimals: a margin of +0.0004 shows as 0.0)
    assert row["reached"] == any(m >= 1e-12 for m in margins)
    assert row["met"] == (row["reached"] and row["seconds_to_threshold"] <= 1.0)
    assert "beat published in 1 s" in capsys.readouterr().out
