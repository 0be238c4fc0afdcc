"""GPU-only commands of README.md and docs/*.md (see tests/cpu/test_docs_commands.py)."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.cpu.test_docs_commands import ROOT, commands_for, python_argv, run_ok

pytestmark = pytest.mark.gpu


def test_gpu_suite_commands_run(tmp_path):
    """``python -m pytest -m gpu`` collects the GPU suite; ``bash tools/gpu_suite.sh`` runs (with one
    trivial GPU test selected, so the suite does not run itself)."""
    commands = commands_for("gpu:test_gpu_suite_commands_run")
    assert commands
    for command in commands:
        if command.startswith("python"):
            res = run_ok(python_argv(command) + ["--collect-only", "-q"], cwd=ROOT)
            assert "tests/gpu/" in res.stdout
        else:
            run_ok(shlex.split(command) + ["test_gpu_docs_placeholder"], cwd=ROOT, OUT=str(tmp_path))
            assert "1 passed" in (tmp_path / "gpu-tests.log").read_text()


def test_gpu_docs_placeholder():
    """Selected by test_gpu_suite_commands_run: a GPU test that needs nothing."""


def test_reference_tests_command_runs(tmp_path):
    """WarpDrive 2.7.1's own pycuda test suite (tools/run_reference_tests.py); needs the staged
    reference tests (bash tools/stage_reference_tests.sh) in .device/reference_repo. The result
    file goes to tmp_path instead of benchmarks/results."""
    if not (ROOT / ".device" / "reference_repo" / "tests").is_dir():
        pytest.skip("needs .device/reference_repo (bash tools/stage_reference_tests.sh) on the GPU machine")
    (command,) = set(commands_for("gpu:test_reference_tests_command_runs"))
    run_ok(python_argv(command) + ["--results-dir", str(tmp_path / "results")], cwd=ROOT, timeout=600,
           OUT=str(tmp_path))
    (result,) = (tmp_path / "results").glob("reference_tests_*.json")
    total = json.loads(result.read_text())["total"]
    assert (total["files_all_passed"], total["passed"]) == (13, 22)


def test_learning_side_by_side_commands_run(tmp_path):
    """README's learning commands, shortened: each framework trains 20 and 40 s (curve every 20 s);
    the second command plays the cross-play matrix. Needs the reference's wheel in .device/anchor."""
    if not (ROOT / ".device" / "anchor").is_dir():
        pytest.skip("needs .device/anchor (the reference's wheel and published policies) on the GPU machine")
    commands = commands_for("gpu:test_learning_side_by_side_commands_run")
    assert [c.split()[-1] for c in commands] == ["reference", "ours", "crossplay"]
    for command in commands[:2]:
        res = run_ok(python_argv(command) + ["--budgets", "20", "40", "--curve-every", "20"], cwd=ROOT, timeout=600,
                     WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    assert "written" in res.stdout
    first = json.loads((tmp_path / "out" / "learning_side_by_side.json").read_text())["crossplay"]
    res = run_ok(python_argv(commands[2]) + ["--budgets", "20", "40"], cwd=ROOT, timeout=600,
                 WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    assert "written" in res.stdout
    for framework in ("ours", "reference"):
        run = json.loads((tmp_path / "side_by_side" / framework / "run.json").read_text())
        assert [s["mark_s"] for s in run["snapshots"]] == [20, 40] and len(run["curve"]) == 2
    doc = json.loads((tmp_path / "out" / "learning_side_by_side.json").read_text())
    assert len(doc["crossplay"]) == 36 and all(0 <= v["mean"] <= 1 for v in doc["crossplay"].values())
    assert doc["crossplay"].keys() == first.keys()  # `crossplay` played the same matrix again from the stored runs


def test_update_graph_benchmark_command_runs(tmp_path):
    """README's side-by-side of the eager and the CUDA-graph-captured update, with 2 iterations per
    measurement: every variant measured both ways, the graphed side replaying both policies' steps."""
    (command,) = commands_for("gpu:test_update_graph_benchmark_command_runs")
    argv = python_argv(command)
    res = run_ok(argv[:argv.index("--iters")] + ["--iters", "2"], cwd=ROOT, timeout=600,
                 WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    assert "written" in res.stdout
    doc = json.loads((tmp_path / "out" / "update_graph.json").read_text())
    assert set(doc["variants"]) == {"chosen-4x4", "tagger-8x16"}
    for row in doc["variants"].values():
        assert row["eager"]["update_graphs"] == [] and row["graphed"]["update_graphs"] == ["runner", "tagger"]
        assert row["update_speedup"] > 0 and row["graphed"]["env_steps_per_s"] > 0
