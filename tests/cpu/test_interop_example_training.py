"""examples/gymnasium_vector_training.py runs end to end for a tiny budget (cpu backend)."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "gymnasium_vector_training.py"


def _load():
    spec = importlib.util.spec_from_file_location("gymnasium_vector_training", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ppo_example_runs_and_returns_finite_numbers(capsys):
    result = _load().main(["--backend", "cpu", "--steps", "1536", "--num-envs", "8", "--rollout", "64", "--epochs", "1"])
    assert result["iterations"] == 3 and result["env_steps"] == 1536
    assert result["episodes"] > 0 and result["returns"]
    assert all(math.isfinite(r) and r > 0 for r in result["returns"])
    assert math.isfinite(result["mean_episode_return"]) and math.isfinite(result["final_loss"])
    out = capsys.readouterr().out
    assert "mean episode return" in out and "final mean episode return" in out


def test_ppo_example_runs_as_a_script():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", "256", "--num-envs", "4", "--rollout", "32", "--quiet"],
        capture_output=True, text=True, timeout=300, cwd=str(ROOT), check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "final mean episode return" in proc.stdout
