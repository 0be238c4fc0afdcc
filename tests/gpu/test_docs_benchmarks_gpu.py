"""The speed benchmarks behind README's headline figures (see tests/cpu/test_docs_commands.py), run as
documented but shortened; results go to a temporary folder ($WARP_DRIVE_BENCH_RESULTS and $OUT), so the
committed files in benchmarks/results/ stay as they are."""

from __future__ import annotations

import json

import pytest

from tests.cpu.test_docs_commands import ROOT, commands_for, python_argv, run_ok

pytestmark = pytest.mark.gpu


def _with(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with the value after ``flag`` replaced."""
    i = argv.index(flag)
    return [*argv[: i + 1], value, *argv[i + 2 :]]


def test_end_to_end_benchmark_command_runs(tmp_path):
    """README's end-to-end figure, one timed iteration per measurement; the reference is measured once
    when its wheel is staged (.device/anchor), else ours only."""
    (command,) = set(commands_for("gpu:test_end_to_end_benchmark_command_runs"))
    argv = _with(_with(python_argv(command), "--iters", "1"), "--reference-runs", "1")
    res = run_ok(argv, cwd=ROOT, timeout=600, WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    assert "written" in res.stdout
    doc = json.loads((tmp_path / "out" / "end_to_end.json").read_text())
    assert {"tag_continuous_100envs", "tag_continuous_500envs"} <= set(doc)
    for name in ("tag_continuous_100envs", "tag_continuous_500envs"):
        row = doc[name]
        assert row["ours"]["env_steps_per_s"] > 0 and row["ours_variant"]["env_steps_per_s"] > 0
        if (ROOT / ".device" / "anchor").is_dir():
            assert row["ratio_total"] > 0


def test_env_step_benchmark_command_runs(tmp_path):
    """README's env-step figure, 20 steps at 100 envs x 110 agents only."""
    (command,) = set(commands_for("gpu:test_env_step_benchmark_command_runs"))
    argv = _with(python_argv(command), "--steps", "20") + ["--grid", "100x110"]
    res = run_ok(argv, cwd=ROOT, timeout=600, WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    assert "written" in res.stdout
    (row,) = json.loads((tmp_path / "out" / "env_step.json").read_text())["rows"]
    assert (row["envs"], row["agents"]) == (100, 110) and "error" not in row
    assert row["graph_env_steps_per_s"] > 0


def test_learner_benchmark_command_runs(tmp_path):
    """README's learner figure: the side-by-side script on one config, one variant, one timed iteration
    (the baseline tree is .baseline/ when staged, else this tree under the baseline's name)."""
    (command,) = set(commands_for("gpu:test_learner_benchmark_command_runs"))
    env = dict(WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    (tmp_path / "out").mkdir()
    run_ok([*command.split(), "tag_tutorial_100envs", ""], cwd=ROOT, timeout=600, **env)
    for name in ("learner_baseline", "learner"):
        doc = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        row = doc["results"]["tag_tutorial_100envs/default"]
        assert "error" not in row, row
        assert row["env_steps_per_s"] > 0 and row["update_flops"] > 0 and 0 < row["update_peak_fraction"] < 1


def test_time_to_policy_command_runs(tmp_path):
    """README's time-to-a-good-policy figure, CartPole only, one seed, within its 2 s target's budget."""
    (command,) = set(commands_for("gpu:test_time_to_policy_command_runs"))
    argv = python_argv(command)
    argv = [*argv[: argv.index("--seeds")], "--seeds", "0", "--configs", "cartpole", "--max-seconds-factor", "1"]
    run_ok(argv, cwd=ROOT, timeout=600, WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    (row,) = json.loads((tmp_path / "out" / "time_to_policy.json").read_text())["rows"]
    assert row["config"] == "cartpole" and row["seed"] == 0
    assert row["train_seconds"] > 0 and row["final_return"] > 0
