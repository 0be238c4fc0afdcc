"""Auto-scaling search against a model of memory and throughput (the GPU trial is injected)."""

from __future__ import annotations

import pytest

from warp_drive.errors import ConfigError
from warp_drive.training.run.auto_scale import search

GIB = 2**30


def _model(bytes_per_env_step=2_000_000, fixed=200_000_000, free=16 * GIB, best_steps=100):
    calls = []

    def trial(envs, steps):
        calls.append((envs, steps))
        peak = fixed + envs * steps * bytes_per_env_step
        if peak > free:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        rate = envs * 1000.0 * (1 - abs(steps - best_steps) / 1000)  # grows with envs, peaks at best_steps
        return rate, peak

    return trial, calls


def test_finds_the_largest_fitting_envs_and_the_fastest_rollout_length():
    trial, calls = _model()
    choice = search(trial, free_bytes=16 * GIB, start_envs=100, steps_per_env=250)
    peak = 200_000_000 + choice.num_envs * choice.steps_per_env * 2_000_000
    assert peak <= 0.8 * 16 * GIB
    assert choice.num_envs >= 12  # 0.8 * 16 GiB / (250 * 2 MB) ~ 27 envs fit at 250 steps
    assert choice.steps_per_env == 100 and choice.train_batch_size == choice.num_envs * 100
    assert "chosen: num_envs=" in choice.table()
    assert calls[0] == (100, 250)  # the config's own size is tried first (and does not fit here)


def test_out_of_memory_probe_shrinks_and_other_errors_propagate():
    trial, calls = _model(free=2 * GIB)
    choice = search(trial, free_bytes=2 * GIB, start_envs=64, steps_per_env=100)
    assert any(t["result"] == "out of memory" for t in choice.trials)
    assert 200_000_000 + choice.num_envs * choice.steps_per_env * 2_000_000 <= 0.8 * 2 * GIB

    def broken(envs, steps):
        raise ValueError("bad kernel argument")

    with pytest.raises(ValueError, match="bad kernel"):
        search(broken, free_bytes=GIB, start_envs=4, steps_per_env=10)


def test_nothing_fits_is_a_clear_error():
    trial, _ = _model(fixed=5 * GIB, free=4 * GIB)
    with pytest.raises(ConfigError, match="does not fit"):
        search(trial, free_bytes=4 * GIB, start_envs=8, steps_per_env=10)


def test_auto_scale_needs_the_gpu_backend(tmp_path):
    from warp_drive.training.example_training_script import auto_scale_overrides, parse_args

    args = parse_args(["--env", "cartpole", "--backend", "cpu", "--auto_scale"])
    with pytest.raises(ConfigError, match="pycuda"):
        auto_scale_overrides(args)
