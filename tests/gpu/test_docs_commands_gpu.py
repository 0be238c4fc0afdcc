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


def test_reference_tutorials_command_runs(tmp_path):
    """Needs WarpDrive 2.7.1's notebooks and assets in .device/ (see the script's header)."""
    if not (ROOT / ".device" / "wdref_tutorials").is_dir():
        pytest.skip("needs .device/wdref_tutorials (2.7.1's notebooks) on the GPU machine")
    (command,) = set(commands_for("gpu:test_reference_tutorials_command_runs"))
    run_ok(shlex.split(command), cwd=ROOT, timeout=3600, OUT=str(tmp_path))
    assert json.loads((tmp_path / "notebooks" / "summary.json").read_text())
