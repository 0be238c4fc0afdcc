"""A third-party trainer from PyPI (skrl's PPO) learns on a warp_drive env through the Gymnasium
adapter (``output="numpy"`` under Gymnasium's RecordEpisodeStatistics and skrl's Gymnasium wrapper):
examples/skrl_ppo.py with a tiny budget, on the cpu backend."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

pytest.importorskip("skrl", reason="skrl is not installed (pip install skrl; in the dev extra for Python >= 3.10)")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "skrl_ppo.py"


def _load():
    spec = importlib.util.spec_from_file_location("skrl_ppo_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return _load()


def test_skrl_ppo_learns_cartpole_through_the_adapter(example, capsys):
    result = example.main(["--env", "cartpole", "--timesteps", "1500", "--num-envs", "16", "--seed", "0"])
    assert result["env_steps"] == 1500 * 16
    assert result["episodes"] > 100 and all(math.isfinite(r) and r >= 1 for r in result["returns"])
    # a learning signal: from ~20 steps per episode to well over 100 (time limit 200) in 24k env steps
    assert result["last_returns"] > 3 * result["first_returns"] and result["last_returns"] > 80, result
    assert "skrl PPO on warp_drive cartpole" in capsys.readouterr().out


def test_skrl_ppo_runs_on_a_box_action_env(example):
    result = example.main(["--env", "pendulum", "--timesteps", "120", "--num-envs", "4", "--episode-length", "50", "--quiet"])
    assert result["episodes"] >= 4 and all(math.isfinite(r) for r in result["returns"])
