"""A second SIGINT or SIGTERM aborts at once with the code of the signal received (130 / 143), as
the first one does after its checkpoint (issue 26 item 8); subprocess tests, cpu only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# main() of a training script whose run() waits inside a StopRequest (what Trainer.train does) forever
SCRIPT = """
import sys, time
from warp_drive.cli import {module} as script
from warp_drive.training.interrupt import StopRequest

def waiting(*args, **kwargs):
    with StopRequest():
        print("ready", flush=True)
        time.sleep(60)
    print("not aborted", flush=True)
    return 0

setattr(script, "{target}", waiting)
sys.exit(script.main({argv}))
"""


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                OMP_NUM_THREADS="1")


def _signal_twice(cmd: list[str], signum: int) -> tuple[int, str, str]:
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        proc.send_signal(signum)
        time.sleep(0.3)  # the first one is handled (a stop request), then the second arrives
        assert proc.poll() is None
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("module,target,argv", [
    ("train", "run", ["--env", "cartpole", "--backend", "cpu", "--quiet"]),
    ("setup_and_train", "_main", ["--env", "cartpole"]),
])
def test_a_second_signal_exits_with_the_code_of_that_signal(signum, code, module, target, argv):
    script = SCRIPT.format(module=module, target=target, argv=argv)
    rc, out, err = _signal_twice([sys.executable, "-c", script], signum)
    assert rc == code, out + err
    assert "not aborted" not in out and "Traceback" not in err
    assert f"{signal.Signals(signum).name} received again" in out + err


def test_cli_double_sigterm_during_training_exits_143(tmp_path):
    from tests.cpu.training.test_crash_resume import CLI

    run = tmp_path / "run"
    proc = subprocess.Popen(CLI + ["--results_dir", str(run), "trainer.num_episodes=100000"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 60
        while not (run / "metrics.jsonl").is_file() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.002)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, out[-2000:]  # stopped with a checkpoint, or aborted by the second signal
    assert "Traceback" not in out
