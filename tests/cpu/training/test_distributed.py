"""Two processes with torchrun and gloo on the CPU: identical weights, per-rank rollouts, resume, and a
kill (SIGTERM to one rank mid-update) and resume that ends with the uninterrupted run's weights."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).resolve().parents[2] / "helpers" / "ddp_worker.py"


def test_two_process_gloo_training_stays_in_sync_and_resumes(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(WORKER), str(tmp_path), "cpu"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[:4000] + proc.stderr[-2000:]
    assert (tmp_path / "ok_0").is_file() and (tmp_path / "ok_1").is_file()
    assert (tmp_path / "run" / "metrics.jsonl").is_file()  # rank 0 wrote metrics


def test_num_gpus_relaunches_the_cli_module_under_torchrun_without_the_count_flag(monkeypatch):
    """`--num_gpus 2` re-runs the command line itself (warp_drive.cli.train) under torchrun with two
    processes; the process-count flag is left out of the children's argv, every other argument kept."""
    import warp_drive.training.distributed as distributed
    from warp_drive.cli import train

    seen = {}
    monkeypatch.setattr(distributed.subprocess, "call", lambda cmd: seen.setdefault("cmd", cmd) and 0)
    assert train.main(["--env", "cartpole", "--backend", "cpu", "--num_gpus", "2", "trainer.seed=3"]) == 0
    cmd = seen["cmd"]
    assert cmd[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert cmd[5:] == ["-m", "warp_drive.cli.train", "--env", "cartpole", "--backend", "cpu", "trainer.seed=3"]


def test_gloo_worker_threads_are_joined_before_the_interpreter_exits():
    """destroy_process_group() leaves a gloo group's worker threads running while anything (a DDP
    wrapper) still holds the group; a worker that lets go of a finished collective's tensors once the
    interpreter is finalizing aborts the process ('terminate called without an active exception').
    release_backends (registered with atexit) joins them first, once the other holders are gone."""
    import os
    import socket

    import pytest
    import torch
    import torch.distributed as dist

    from warp_drive.training import distributed

    if not os.path.isdir("/proc/self/task"):
        pytest.skip("counts threads through /proc")

    def threads() -> int:
        return len(os.listdir("/proc/self/task"))

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    distributed.setup_torch_process_group(0, 1, master_port=port, backend="gloo")
    holder = [dist.group.WORLD]  # what a DDP wrapper holds
    out = [torch.zeros(3)]
    dist.all_gather(out, torch.ones(3))
    del out
    distributed.clear_torch_process_group()
    assert not dist.is_initialized()
    running = threads()
    holder.clear()
    distributed.release_backends()  # what atexit runs
    assert threads() <= running - 2, (running, threads())  # the two gloo workers were joined
