"""The bundled CartPole config learns on the cpu backend, and the classic-control learning benchmark
(benchmarks/learning_classic_control.py) writes its results file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.threads import torch_threads

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture()
def bench():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import learning_classic_control

        yield learning_classic_control
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_bundled_cartpole_config_reaches_475_greedy(tmp_path, bench):
    """The bundled config as is (PPO, 8 envs, 100,000 env steps; about 45 s on one core):
    100 greedy episodes from varied starts average >= 475 (an untrained policy: about 10-40)."""
    with torch_threads(1):
        config = bench.load_config("cartpole", 1, "cpu", [], str(tmp_path))
        assert config.trainer.num_iterations(500) * config.trainer.train_batch_size <= 100_000
        trainer = bench.build(config, "cartpole", "cpu", str(tmp_path / "train"))
        evaluator = bench.build(bench.eval_config(config, 1, 100), "cartpole", "cpu", str(tmp_path / "eval"))
        before = bench.greedy_returns(trainer, evaluator)
        trainer.train()
        after = bench.greedy_returns(trainer, evaluator)
    assert after.size == 100 and before.mean() < 100
    assert after.mean() >= 475, (before.mean(), after.mean(), np.percentile(after, [0, 50]))


def test_benchmark_writes_per_seed_results_and_the_zoo_row(tmp_path, bench):
    out = tmp_path / "learning.json"
    with torch_threads(1):
        assert bench.main(["--envs", "cartpole", "--seeds", "3", "4", "--checks", "2", "--eval_envs", "10",
                           "--eval_episodes", "20", "--set", "trainer.num_episodes=2", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["seeds"] == [3, 4] and doc["environment"]["torch"] and doc["environment"]["hostname"]
    cartpole = doc["envs"]["cartpole"]
    assert cartpole["zoo"] == {"gym_id": "CartPole-v1", "algorithm": "PPO", "zoo_return": 500.0, "zoo_env_steps": 100_000}
    runs = cartpole["seeds"]
    assert [r["seed"] for r in runs] == [3, 4]
    for r in runs:
        assert r["env_steps"] == 768 and r["eval_episodes"] == 20 and len(r["curve"]) == 2  # 1,000 steps: 3 iterations
        assert 8 <= r["greedy_return_mean"] <= 500 and r["train_seconds"] > 0
    summary = cartpole["summary"]["greedy_return"]
    assert summary["min"] <= summary["mean"] <= summary["max"]
    with torch_threads(1):  # --update keeps the envs already in the file
        bench.main(["--envs", "pendulum", "--seeds", "3", "--checks", "1", "--eval_envs", "4", "--eval_episodes", "4",
                    "--set", "trainer.num_episodes=21", "--out", str(out), "--update"])
    assert sorted(json.loads(out.read_text())["envs"]) == ["cartpole", "pendulum"]


def test_merge_gathers_seeds_of_several_files_and_refuses_a_seed_twice(tmp_path, bench):
    """One job per GPU and seed, then ``--merge``: the seeds side by side and the summary over all."""
    files = []
    for seed in (5, 6):
        files.append(tmp_path / f"s{seed}.json")
        with torch_threads(1):
            bench.main(["--envs", "cartpole", "--seeds", str(seed), "--checks", "1", "--eval_envs", "5",
                        "--eval_episodes", "5", "--set", "trainer.num_episodes=2", "--out", str(files[-1])])
    out = tmp_path / "merged.json"
    assert bench.main(["--merge", *map(str, files), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    seeds = doc["envs"]["cartpole"]["seeds"]
    assert doc["seeds"] == [5, 6] and [s["seed"] for s in seeds] == [5, 6] and len(doc["merged_from"]) == 2
    returns = [s["greedy_return_mean"] for s in seeds]
    assert doc["envs"]["cartpole"]["summary"]["greedy_return"] == {
        "mean": float(np.mean(returns)), "min": min(returns), "max": max(returns)}
    with pytest.raises(SystemExit, match="seed"):
        bench.main(["--merge", str(files[0]), str(files[0]), "--out", str(out)])
