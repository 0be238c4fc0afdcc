"""tools/reset_pool_test_odds.py: the pass rate of 2.7.1's statistical reset-pool test for an exact pool."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import reset_pool_test_odds as odds  # noqa: E402


def test_a_pool_far_from_zero_always_passes_and_one_centred_on_zero_often_fails():
    rng = np.random.default_rng(0)
    far = odds.pass_rate(((-0.6,), (-0.4,)), 3, 10_000, 0.1, None, 2_000, rng)
    centred = odds.pass_rate(((-0.05,), (0.05,)), 3, 10_000, 0.1, None, 2_000, rng)
    assert far == 1.0
    assert 0.3 < centred < 0.95


def test_more_draws_and_a_looser_tolerance_pass_more_often():
    bounds = ((-0.05, -0.05), (0.05, 0.05))
    tight = odds.pass_rate(bounds, 3, 1_000, 0.1, None, 3_000, np.random.default_rng(1))
    loose = odds.pass_rate(bounds, 3, 100_000, 0.3, None, 3_000, np.random.default_rng(1))
    assert loose > tight + 0.2


def test_the_command_prints_every_classic_control_file(tmp_path, capsys):
    out = tmp_path / "odds.json"
    assert odds.main(["--trials", "500", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in odds.TESTS)
    import json
    rates = json.loads(out.read_text())["pass_rate"]
    assert rates["test_mountain_car.py"] == 1.0 and rates["test_cartpole.py"] < 0.9
