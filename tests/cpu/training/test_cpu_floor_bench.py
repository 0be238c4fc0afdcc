"""benchmarks/bench_cpu_floor.py: its FLOP count is what torch actually runs in an iteration."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.helpers.threads import torch_threads
from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.training.trainer import Trainer

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_cpu_floor.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_cpu_floor", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("algorithm, epochs", [("A2C", 1), ("PPO", 3)])
def test_counted_flops_equal_torch_flop_counter(tmp_path, bench, algorithm, epochs):
    pol = {"to_train": True, "algorithm": algorithm, "lr": 0.01, "num_epochs": epochs, "num_minibatches": 2,
           "model": {"fc_dims": [24, 16]}}
    config = {"name": "toy", "trainer": {"num_envs": 8, "train_batch_size": 8 * 6, "num_episodes": 8 * 100,
                                         "env_backend": "cpu", "seed": 1},
              "policy": {"a": dict(pol), "b": dict(pol, to_train=False)},
              "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}
    w = EnvWrapper(ToyLine(num_agents=5, episode_length=20, goal=6.0), num_envs=8, env_backend="cpu")
    t = Trainer(w, config, {"a": [0, 2, 4], "b": [1, 3]}, verbose=False)
    t.cpu_chunk_samples = 10  # chunked forwards and backwards count the same
    t.env_wrapper.reset_all_envs()
    counted = bench.policy_flops(t)
    with FlopCounterMode(display=False) as fc:
        t.update(t.generate_rollout())
    assert fc.get_total_flops() == counted["total_flops"]
    assert counted["policies"]["b"]["update_flops"] == 0
    assert counted["policies"]["a"]["linear_shapes"] == [(1, 24), (24, 16), (16, 3), (16, 1)]
    assert bench.rollout_buffer_bytes(t) == sum(
        x.numel() * x.element_size() for p in t.policies.values() for x in vars(p.buffers).values() if x is not None
    ) + sum(x.numel() * x.element_size() for x in (t.rollout.shared.done, t.rollout.shared.timestep,
                                                   t.rollout.shared.rewards))


def test_gemm_rate_is_positive_and_names_its_shapes(bench):
    rate = bench.gemm_rate([(8, 16), (16, 4)], rows=64, seconds=0.01)
    assert rate["flops_per_s"] > 0 and rate["shapes"] == [(8, 16), (16, 4)]
    assert torch.get_num_threads() >= 1


def test_rollout_mode_says_whether_the_rollout_runs_in_env_parts(tmp_path, bench):
    from warp_drive.training.engine.cpu_pipeline import SEPARABLE

    config = {"name": "toy", "trainer": {"num_envs": 4, "train_batch_size": 8, "num_episodes": 100, "env_backend": "cpu"},
              "policy": {"a": {"to_train": True, "algorithm": "A2C", "model": {"fc_dims": [8]}}},
              "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}
    with torch_threads(2):
        for separable, expected in ((False, "plain loop (ToyLine does not set numpy_step_is_env_separable = True)"),
                                    (True, "2 env parts")):
            env = type("ToyLine", (ToyLine,), {SEPARABLE: separable})(num_agents=2)
            t = Trainer(EnvWrapper(env, num_envs=4, env_backend="cpu"), config, {"a": [0, 1]}, verbose=False)
            t.env_wrapper.reset_all_envs()
            assert bench.rollout_mode(t) == expected
