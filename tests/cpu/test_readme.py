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
    assert 'python -m pytest -m "not gpu" -n auto --maxprocesses 4 --dist loadfile' in text
    assert "python -m warp_drive.training.example_training_script --env tag_continuous" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pytest -m "not gpu" -n auto --maxprocesses 4 --dist loadfile' in ci and 'pip install -q ".[dev]"' in ci


def test_readme_describes_the_cpu_sized_main_job():
    """What README says of the main command without a GPU is what the script does."""
    from example_envs import get_default_config_path
    from warp_drive.config import load_run_config
    from warp_drive.training.example_training_script import CPU_SIZED_OVERRIDES, CPU_SIZED_SUMMARY

    cfg = load_run_config(get_default_config_path("tag_continuous"), CPU_SIZED_OVERRIDES["tag_continuous"])
    iters = cfg.trainer.num_iterations(cfg.env["episode_length"])
    text = " ".join(README.read_text().split())
    assert f"{cfg.env['num_taggers']} taggers and {cfg.env['num_runners']} runners" in text
    assert f"{iters} iterations" in text and f"{iters} iterations" in CPU_SIZED_SUMMARY["tag_continuous"]
    assert "--full_size" in text
