"""No silent marathons in the Lightning CLI (issue 26 item 4): when iterations are slow, SIGINT / SIGTERM
stop inside the iteration in progress within seconds, as in the main script (one mechanism:
``StopRequest.allow_abort`` and ``check_abort``), with ``last.ckpt`` of the last completed iteration
(never a half-updated one), the message and exit 130 / 143."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")

from warp_drive.training.lightning import cli_runs  # noqa: E402
from warp_drive.cli import lightning_train as cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
# --env tag_continuous with its bundled (GPU-sized) settings: about 100 s per iteration on 2 CPU cores
GPU_SIZED = ["--env", "tag_continuous", "--backend", "cpu", "--quiet"]
TINY_TAG = ["trainer.num_envs=4", "trainer.train_batch_size=80", "env.num_taggers=2", "env.num_runners=5",
            "env.episode_length=20", "env.num_other_agents_observed=3", "trainer.seed=1",
            "policy.runner.model.fc_dims=[16, 16]", "policy.tagger.model.fc_dims=[16, 16]"]


def _stop_inside_first_iteration(runs: Path, signum: int, *extra: str) -> tuple[int, float, str, Path]:
    """Starts the CLI, waits for the first iteration to begin (last.ckpt of its starting boundary is
    written just before), sends ``signum`` inside it; returns (exit code, seconds from signal to
    exit, output, the run's last.ckpt)."""
    before = set(runs.rglob("last.ckpt"))
    cmd = [sys.executable, "-u", "-m", "warp_drive.training.lightning.train", *GPU_SIZED, "--results-dir", str(runs),
           *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV, cwd=runs.parent)
    try:
        deadline = time.monotonic() + 40
        while not set(runs.rglob("last.ckpt")) - before:
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "no last.ckpt: training did not start"
            time.sleep(0.05)
        time.sleep(1.0)  # inside the first (about 100 s) iteration
        sent = time.monotonic()
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    (last,) = set(runs.rglob("last.ckpt")) - before
    return proc.returncode, took, out, last


def test_sigint_then_sigterm_inside_a_slow_iteration_stop_within_seconds(tmp_path):
    runs = tmp_path / "runs"
    rc, took, out, last = _stop_inside_first_iteration(runs, signal.SIGINT)
    assert rc == 130, out[-3000:]
    print(f"SIGINT: exit {took:.2f} s after the signal")
    assert took < 15, f"SIGINT took {took:.1f} s"
    assert "SIGINT received: stopping at the next env step" in out, out[-3000:]
    assert f"SIGINT: stopped after iteration 0 (iteration 1, in progress, was discarded); checkpoint {last}" in out
    assert "continue with: python -m warp_drive.training.lightning.train" in out and f"--resume {last}" in out
    assert cli_runs.checkpoint_iteration(last) == 0  # intact: the boundary the discarded iteration started from

    # the checkpoint resumes (Lightning restores it, training starts again); SIGTERM stops that run the same way
    rc, took, out, resumed = _stop_inside_first_iteration(runs, signal.SIGTERM, "--resume", str(last))
    assert rc == 143, out[-3000:]
    print(f"SIGTERM: exit {took:.2f} s after the signal")
    assert took < 15, f"SIGTERM took {took:.1f} s"
    assert f"Restored all states from the checkpoint at {last}" in out, out[-3000:]
    assert "SIGTERM: stopped after iteration 0 (iteration 1, in progress, was discarded)" in out, out[-3000:]
    assert cli_runs.checkpoint_iteration(resumed) == 0


def test_stop_inside_an_update_keeps_the_last_completed_iterations_state(tmp_path, monkeypatch):
    """Slow iterations (threshold lowered), updates in chunks of 8 rows (each chunk checks for a stop):
    SIGINT in the third iteration's update once a weight has stepped exits 130 with last.ckpt
    holding the weights of iteration 2, not the partial ones, and the run resumes from it to its end."""
    import warp_drive.training.algorithms.actor_critic.update as update
    import warp_drive.training.run.long_runs as long_runs
    from warp_drive.training.engine import Engine
    from warp_drive.training.lightning.module import WarpDriveModuleBase

    monkeypatch.setattr(long_runs, "SLOW_ITERATION_S", 0.0)
    monkeypatch.setattr(Engine, "update_chunk_rows", lambda self, p: 8)
    boundaries: dict[int, dict[str, torch.Tensor]] = {}
    module_of: list[object] = []
    real_step, real_check = WarpDriveModuleBase.training_step, update.check_abort
    sent = []

    def training_step(self, batch, batch_idx):
        module_of[:] = [self]
        real_step(self, batch, batch_idx)
        boundaries[self.engine.iteration] = {k: v.detach().clone() for k, v in self.state_dict().items()}

    def check_abort():
        module = module_of[0] if module_of else None
        if module is not None and module.engine.iteration == 2 and not sent:  # the third iteration's update
            if any(not torch.equal(v, boundaries[2][k]) for k, v in module.state_dict().items()):
                sent.append(True)  # a weight has stepped
                os.kill(os.getpid(), signal.SIGINT)
        real_check()

    monkeypatch.setattr(WarpDriveModuleBase, "training_step", training_step)
    monkeypatch.setattr(update, "check_abort", check_abort)
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    base = ["--env", "tag_continuous", "--backend", "cpu", "--quiet", "--iterations-per-epoch", "3", *TINY_TAG,
            "--results-dir", str(runs)]
    assert cli.main([*base, "--max-epochs", "2"]) == 130
    assert sent
    last = next(runs.rglob("last.ckpt"))
    saved = torch.load(last, map_location="cpu", weights_only=True)
    assert cli_runs.checkpoint_iteration(last) == 2 and sorted(boundaries) == [1, 2]
    partial = module_of[0].state_dict()
    assert any(not torch.equal(partial[k], boundaries[2][k]) for k in partial)  # the discarded update had begun
    for key, value in boundaries[2].items():
        assert torch.equal(saved["state_dict"][key], value), key
    monkeypatch.setattr(update, "check_abort", real_check)
    assert cli.main([*base, "--max-epochs", "2", "--resume", "last", "--summary"]) == 0
    import json

    assert json.loads((runs / "rank0_summary.json").read_text())["iteration"] == 6
