"""The README's quick start runs as written (on the cpu backend here)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_quick_start_runs():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    quick = [b for b in blocks if "EnvWrapper" in b and "step_all_envs" in b]
    assert quick, "the README lost its quick start"
    namespace: dict = {}
    exec(compile(quick[0], "README quick start", "exec"), namespace)
    dm = namespace["dm"]
    assert dm.get_shape("observations") == (1000, 105, 71)
    assert int(dm.pull_data_from_device("_timestep_").max()) == 10


def test_readme_names_the_commands_ci_runs():
    text = README.read_text()
    assert 'python -m pytest -m "not gpu"' in text
    assert "python -m warp_drive.training.example_training_script --env tag_continuous" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pytest -m "not gpu"' in ci and 'pip install -q ".[dev]"' in ci
