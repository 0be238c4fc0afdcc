"""The example training script: CLI, overrides, Ctrl-C checkpoint, resume, evaluation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BASE = [sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "cartpole", "--backend", "cpu", "--quiet",
        "trainer.num_envs=4", "trainer.train_batch_size=200", "env.episode_length=50", "saving.metrics_log_freq=1"]


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def test_ctrl_c_saves_a_checkpoint_and_resume_continues(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(BASE + ["trainer.num_episodes=1000000", "--results_dir", str(run)], cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while not (run / "metrics.jsonl").is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert (run / "metrics.jsonl").is_file(), proc.communicate()[0][-2000:]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-2000:]
    assert "checkpoint saved" in out
    assert (run / "checkpoint_latest.pt").is_file()
    done = len((run / "metrics.jsonl").read_text().splitlines())
    res = subprocess.run(BASE + ["trainer.num_episodes=40", "--results_dir", str(tmp_path / "resumed"), "--resume", str(run)],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["iteration"] > 1 and rows[0]["iteration"] >= done  # continued, not restarted
    ev = subprocess.run(BASE + ["--resume", str(run), "--evaluate"], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                        timeout=300)
    assert ev.returncode == 0 and "mean episode return" in ev.stdout, ev.stdout + ev.stderr


def test_bad_override_is_a_clear_error(tmp_path):
    res = subprocess.run(BASE + ["trainer.num_env=5"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode != 0
    assert "num_envs" in res.stderr and "did you mean" in res.stderr


@pytest.mark.parametrize("name", ["tag_continuous", "tag_gridworld", "cartpole", "acrobot", "mountain_car",
                                  "continuous_mountain_car", "pendulum"])
def test_every_bundled_config_loads_and_builds(name):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.config.env_kwargs import check_env_kwargs

    cfg = load_run_config(get_default_config_path(name))
    cls = get_example_env_class(name)
    check_env_kwargs(cls, cfg.env, supplied_by_caller=("env_backend",))
    cls(**cfg.env)


def test_out_of_memory_becomes_a_clear_message(monkeypatch, capsys):
    from warp_drive.training import example_training_script as script

    def boom(args):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(script, "run", boom)
    assert script.main(["--env", "cartpole", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "does not fit in GPU memory" in err and "--auto_scale" in err
