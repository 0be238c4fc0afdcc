"""The Lightning CLI's runs (``python -m warp_drive.training.lightning.train``) on the cpu backend, as the
main script's: SIGINT stops with a resumable last.ckpt and exit 130, failures print the short report
(exit codes of run_failures), the time estimate before a GPU-sized run, a unique engine folder per run."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")

from warp_drive.training.run import run_failures as rf  # noqa: E402
from warp_drive.training.lightning import cli_runs  # noqa: E402
from warp_drive.cli import lightning_train as cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TINY_TAG = ["trainer.num_envs=4", "trainer.train_batch_size=80", "env.num_taggers=2", "env.num_runners=5",
            "env.episode_length=20", "env.num_other_agents_observed=3", "trainer.seed=1",
            "policy.runner.model.fc_dims=[16, 16]", "policy.tagger.model.fc_dims=[16, 16]"]
BASE = ["--env", "tag_continuous", "--backend", "cpu", "--quiet", "--iterations-per-epoch", "2", *TINY_TAG]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-u", "-m", "warp_drive.training.lightning.train", *args]


def _wait_for(predicate, proc: subprocess.Popen, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sigint_writes_a_resumable_last_ckpt_and_exits_130(tmp_path):
    runs = tmp_path / "runs"
    cmd = _cmd(*BASE, "--max-epochs", "2000", "--results-dir", str(runs))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV, cwd=tmp_path)
    try:
        _wait_for(lambda: any(runs.rglob("*.ckpt")), proc)  # training is under way: its first epoch ended
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-3000:]
    assert time.monotonic() - sent < 5.0
    assert "SIGINT: stopped after iteration" in out and "continue with: python -m warp_drive.training.lightning.train" in out
    last = next(runs.rglob("last.ckpt"))
    iteration = cli_runs.checkpoint_iteration(last)
    assert iteration is not None and iteration > 0
    # the checkpoint resumes: run to the end (a few more epochs), exit 0
    epochs = int(torch.load(last, weights_only=True)["epoch"]) + 3
    done = subprocess.run(_cmd(*BASE, "--max-epochs", str(epochs), "--results-dir", str(runs), "--resume", str(last),
                               "--summary"), capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    summary = json.loads((runs / "rank0_summary.json").read_text())
    assert summary["iteration"] > iteration


def test_disk_full_while_checkpointing_prints_the_report_and_exits_3(tmp_path, monkeypatch, capsys):
    """The third checkpoint write fails with ENOSPC: exit 3, at most 4 lines, error.log, and the
    checkpoint named intact loads and is the Lightning --resume command's."""
    import lightning.fabric.plugins.io.torch_io as torch_io

    real = torch_io._atomic_save
    calls = []

    def full_disk(checkpoint, path):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(checkpoint, path)

    monkeypatch.setattr(torch_io, "_atomic_save", full_disk)
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    rc = cli.main([*BASE, "--max-epochs", "5", "--results-dir", str(runs)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == rf.EXIT_IO == 3, err
    assert len(lines) <= 4 and lines[0].startswith("error: disk full while writing") and "ENOSPC" in lines[0], err
    assert "Traceback" not in err
    log = runs.resolve() / rf.ERROR_LOG
    assert f"traceback: {log} (--debug prints it)" in lines and "Traceback (most recent call last)" in log.read_text()
    intact = next(line for line in lines if line.startswith("intact: "))
    path = Path(intact.split()[1])
    assert cli_runs.checkpoint_iteration(path) == 2 and intact.endswith("(iteration 2)"), err  # epoch 0's checkpoint
    resume = next(line for line in lines if line.startswith("resume: "))
    assert resume.startswith("resume: python -m warp_drive.training.lightning.train ") and resume.endswith(
        f"--resume {path}"), err


def test_gpu_sized_run_on_the_cpu_backend_prints_the_estimate_first(tmp_path):
    """--env tag_continuous with its bundled (GPU-sized) settings: the probe's estimate line comes
    before the first iteration (the process is killed once it did)."""
    cmd = _cmd("--env", "tag_continuous", "--backend", "cpu", "--quiet", "--results-dir", str(tmp_path / "runs"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV, cwd=tmp_path)
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 18
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("estimated ") or time.monotonic() > deadline:
                break
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    line = seen[-1] if seen else ""
    assert line.startswith("estimated ") and "iterations on the cpu backend" in line, "".join(seen)[-3000:]
    assert int(line.split()[1].replace(",", "")) >= 3  # minutes
    assert not list((tmp_path / "runs").rglob("*.ckpt"))  # before the first iteration ended


def test_every_run_gets_its_own_engine_folder(tmp_path, monkeypatch):
    """Two runs with one --results_dir (in one process, as in the same second): two engine folders;
    DDP ranks > 0 take rank 0's name from the environment."""
    import warp_drive.training.lightning as wl

    seen: list[str] = []
    real = wl.ExampleEnvEngineFactory

    def factory(**kw):
        seen.append(kw["results_dir"])
        return real(**kw)

    monkeypatch.setattr(wl, "ExampleEnvEngineFactory", factory)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv(cli._ENGINE_RUN_ENV, raising=False)  # restored after the test
    for _ in range(2):
        assert cli.main([*BASE, "--max-epochs", "1", "--results-dir", str(tmp_path / "runs")]) == 0
    assert len(set(seen)) == 2 and all(Path(p).parent == tmp_path / "runs" / "engine" for p in seen), seen
    monkeypatch.setenv("LOCAL_RANK", "1")  # a DDP child inherits rank 0's choice
    assert cli.engine_run_name() == Path(seen[-1]).name
