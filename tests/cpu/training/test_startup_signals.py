"""Issue 39: SIGTERM before training starts (while the modules load, while the run is planned and
built) and during ``--evaluate`` ends the command line with exit 143 and one line, not the default
silent death (status -15)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = [sys.executable, "-m", "warp_drive.training.example_training_script"]
TINY = ["--env", "cartpole", "--backend", "cpu", "trainer.num_envs=4", "trainer.train_batch_size=200",
        "env.episode_length=50", "trainer.num_episodes=8"]


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                OMP_NUM_THREADS="1")


def _term_when(argv: list[str], cwd: Path, marker: str) -> subprocess.CompletedProcess:
    """Starts ``argv``, sends SIGTERM as soon as ``marker`` is printed, returns the finished process."""
    proc = subprocess.Popen(argv, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        seen.append(line)
        if marker in line or not line:
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(seen) + out, err)


def test_sigterm_while_the_modules_load_exits_143_with_a_message(tmp_path):
    code = ("import builtins, os, runpy, signal, sys\n"
            "sys.argv = ['x', *sys.argv[1:]]\n"
            "real = builtins.__import__\n"
            "def spy(name, *a, **k):\n"
            "    if name == 'warp_drive.cli.train':\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = spy\n"
            "runpy.run_module('warp_drive.training.example_training_script', run_name='__main__')\n")
    res = subprocess.run([sys.executable, "-c", code, *TINY, "--results_dir", str(tmp_path / "run")], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert res.returncode == 143, res.stderr[-2000:]
    assert res.stderr.strip() == "SIGTERM received outside training: stopped (no training step was lost)"
    assert not (tmp_path / "run").exists()


def test_sigterm_right_after_start_exits_143_and_leaves_no_empty_run_folder(tmp_path):
    # a run long enough that the signal cannot arrive after its end (2 iterations finished first on a fast box)
    res = _term_when(SCRIPT + TINY + ["trainer.num_episodes=4000", "--results_dir", str(tmp_path / "run")], tmp_path,
                     "results:")
    assert res.returncode == 143, res.stdout[-2000:] + res.stderr[-2000:]
    assert "SIGTERM" in res.stderr and "Traceback" not in res.stderr, res.stderr
    run = tmp_path / "run"
    assert not run.exists() or any(run.iterdir())  # a stop before training leaves no empty folder behind


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_evaluate_exits_with_its_code_and_a_message(tmp_path, signum, code):
    run = tmp_path / "run"
    first = subprocess.run(SCRIPT + TINY + ["--results_dir", str(run), "--eval_episodes", "0"], cwd=tmp_path,
                           env=_env(), capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    argv = SCRIPT + TINY + ["--resume", str(run), "--evaluate", "--eval_episodes", "100000"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "resumed from" not in (line := proc.stdout.readline()) and line:
        pass
    time.sleep(0.5)  # inside the evaluation
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, out[-2000:] + err[-2000:]
    assert f"{signal.Signals(signum).name} received outside training" in err and "Traceback" not in err, err
