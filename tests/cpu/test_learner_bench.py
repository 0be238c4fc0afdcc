"""benchmarks/bench_learner.py's arithmetic: the peak table lookup, FLOPs counted from a model's shapes and the
floor bytes of an iteration, on a cpu-backend trainer of the bundled Tag config (the GPU run is the benchmark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torch import nn

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture()
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_learner as mod

    return mod


def test_peaks_by_gpu_name(bench):
    assert bench.peaks("NVIDIA H100 80GB HBM3") == (989.0, 3.35)
    assert bench.peaks("NVIDIA H100 PCIe") == (756.0, 2.0)
    assert bench.peaks("NVIDIA H200") == (989.0, 4.8)
    assert bench.peaks("NVIDIA A100-SXM4-80GB") == (312.0, 2.039)
    assert bench.peaks("NVIDIA GeForce RTX 4090") == (None, None)


def test_forward_flops_count_every_linear(bench):
    from warp_drive.training.models.fully_connected import FullyConnected

    model = FullyConnected(71, [21, 21], (256, 256))
    # the figure: 71 -> 256 -> 256 -> 21 + 21 + 1, about 0.19 MFLOP per agent row
    assert bench.forward_flops_per_row(model) == 2 * (71 * 256 + 256 * 256 + 256 * 43)
    assert bench.forward_flops_per_row(nn.Sequential(nn.ReLU())) == 0


def test_work_per_iteration_of_the_bundled_tag_config(bench, tmp_path):
    from common import make_trainer

    t = make_trainer("tag_continuous", ["env.num_taggers=2", "env.num_runners=5", "env.num_other_agents_observed=3", "trainer.num_envs=4",
                                        "trainer.train_batch_size=40", "trainer.num_episodes=1000"],
                     backend="cpu", results_dir=str(tmp_path), tutorial=False)
    work = bench.work_per_iteration(t)
    steps = 40 // 4
    expected_rollout = expected_update = 0
    for p in t.policies.values():
        fwd = bench.forward_flops_per_row(p.model)
        expected_rollout += (steps + 1) * 4 * p.num_agents * fwd
        expected_update += p.config.num_epochs * steps * 4 * p.num_agents * 3 * fwd
    assert work["rollout_flops"] == expected_rollout > 0
    assert work["update_flops"] == expected_update > 0
    assert work["floor_bytes"] > 0


def test_table_reads_the_side_by_side_files(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCH))
    import learner_table

    row = {"iteration_ms": 50.0, "env_steps_per_s": 400e3, "env_step_ms": 2.0, "forward_sampling_ms": 8.0,
           "update_ms": 40.0, "update_tflops": 40.0, "update_peak_fraction": 0.04, "memory_floor_fraction": 0.016}
    fast = {**row, "iteration_ms": 25.0, "env_steps_per_s": 800e3}
    for name, results in [("learner_baseline", {"tag/default": row}), ("learner", {"tag/default": fast})]:
        (tmp_path / f"{name}_GPU.json").write_text(json.dumps({"results": results}))
    monkeypatch.setattr(learner_table, "RESULTS", tmp_path)
    lines = learner_table.rows("GPU")
    assert any("tag/default (baseline)" in line and "1.00x" in line for line in lines)
    assert any(line.startswith("| tag/default |") and "2.00x" in line for line in lines)
