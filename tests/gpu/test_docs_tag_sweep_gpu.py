"""The documented ``benchmarks/tag_sweep.py`` command (README, docs/results.md) end to end on one GPU, shortened: two seeds of the
chosen settings train 20 and 40 s each, one after the other, and one JSON gathers both runs and their
mean and spread."""

from __future__ import annotations

import json

import pytest

from tests.cpu.test_docs_commands import ROOT, commands_for, python_argv, run_ok

pytestmark = pytest.mark.gpu


def test_tag_sweep_command_runs(tmp_path):
    if not (ROOT / ".device" / "anchor" / "pretrained").is_dir():
        pytest.skip("needs .device/anchor/pretrained (the published Tag policies) on the GPU machine")
    (command,) = set(commands_for("gpu:test_tag_sweep_command_runs"))  # README and docs/results.md: one line
    script = python_argv(command)[:2]  # the documented script with one candidate, one GPU, two seeds, short budgets
    res = run_ok([*script, "chosen", "--gpus", "1", "--seeds", "1", "2", "--budgets", "20", "40"], cwd=ROOT,
                 timeout=600, WARP_DRIVE_BENCH_RESULTS=str(tmp_path), OUT=str(tmp_path / "out"))
    assert "written" in res.stdout
    doc = json.loads((tmp_path / "out" / "learning_sweep_tag.json").read_text())
    runs = doc["runs"]["chosen"]
    assert set(runs) == {"1", "2"} and all(r is not None for r in runs.values())
    assert [c["mark_s"] for c in runs["1"]["curve"]] == [20, 40]
    assert runs["1"]["curve"][-1]["env_steps"] > 0
    row = doc["over_seeds"]["chosen"]
    assert row["seeds"] == 2 and 0 <= row["fresh:taggers_vs_published_runners"]["mean"] <= 1
    assert row["published_start:published_taggers_vs_runners"]["std"] is not None
