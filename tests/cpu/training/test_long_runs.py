"""No silent marathons (issue 26 item 4): a GPU-sized config on the cpu backend prints its estimate
before the first iteration, and Ctrl-C inside a slow iteration exits 130 within seconds with a
resumable checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from warp_drive.training.run.checkpoint import resolve_checkpoint

ROOT = Path(__file__).resolve().parents[3]


def test_gpu_sized_config_prints_estimate_and_stops_within_seconds(tmp_path):
    cmd = [sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "tag_continuous",
           "--full_size", "--backend", "cpu", "--results_dir", "run", "--eval_episodes", "0"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("checkpoint written"):  # after the estimate: the iteration-0 boundary is saved
                break
        estimate = [s for s in lines if s.startswith("estimated ")]
        assert estimate and "iterations on the cpu backend" in estimate[0] and "--full_size" in estimate[0], lines
        time.sleep(1.0)  # inside the first (several-minute) iteration
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, _ = proc.communicate(timeout=30)
        assert time.monotonic() - sent < 10, "Ctrl-C took too long"
    finally:
        proc.kill()
    assert proc.returncode == 130, "".join(lines) + out
    assert "stopped after iteration 0" in out and "--resume" in out
    path, state = resolve_checkpoint(tmp_path / "run")  # intact and resumable
    assert state["iteration"] == 0 and (tmp_path / "run" / "checkpoint_00000000.pt").is_file()
