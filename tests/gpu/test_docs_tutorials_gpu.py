"""The GPU-only documented command that runs longest: WarpDrive 2.7.1's tutorial notebooks
(see tests/cpu/test_docs_commands.py). A file of its own, so that tools/gpu_suite.sh runs it on one
GPU while the other documented commands (test_docs_commands_gpu.py) run on another."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.cpu.test_docs_commands import ROOT, commands_for, run_ok

pytestmark = pytest.mark.gpu


def test_reference_tutorials_command_runs(tmp_path):
    """Needs WarpDrive 2.7.1's notebooks and assets in .device/ (see the script's header)."""
    if not (ROOT / ".device" / "wdref_tutorials").is_dir():
        pytest.skip("needs .device/wdref_tutorials (2.7.1's notebooks) on the GPU machine")
    (command,) = set(commands_for("gpu:test_reference_tutorials_command_runs"))
    run_ok(shlex.split(command), cwd=ROOT, timeout=3600, OUT=str(tmp_path))
    assert json.loads((tmp_path / "notebooks" / "summary.json").read_text())
