"""tools/gpu_suite.sh's selection logic, run here with a stand-in nvidia-smi that lists two GPUs (the
GPU tests themselves skip on this machine): the files are spread over one worker per GPU, and the
tests that need the machine to themselves (two GPUs, 2.7.1's timed runner) run only afterwards;
``$CUDA_VISIBLE_DEVICES`` limits the workers to the GPUs it names."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.cpu.test_docs_commands import ROOT

pytest.importorskip("xdist")
SMI = """#!/bin/sh
case "$*" in
  *-L*) printf 'GPU 0: Stand-in (UUID: a)\\nGPU 1: Stand-in (UUID: b)\\n' ;;
  *) printf 'name, driver_version, memory.total [MiB]\\nStand-in, 0, 0\\nStand-in, 0, 0\\n' ;;
esac
"""


def _suite(tmp_path, *args, **env):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    out = tmp_path / "out"
    # no $PYTHONPATH: with one, the script hands it to the workers through a .pth file in site-packages
    # (needed on the GPU machine, a lasting change here)
    full = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "PYTHONPATH")}
    full.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", OUT=str(out), **env)
    res = subprocess.run(["bash", "tools/gpu_suite.sh", *args], cwd=ROOT, env=full, capture_output=True, text=True,
                         timeout=300)
    return res, out


def _ran(log) -> set[str]:
    return set(re.findall(r"::(test_\w+)", log.read_text()))


def test_the_timed_and_two_gpu_tests_run_alone_after_the_spread_ones(tmp_path):
    res, out = _suite(tmp_path, "", "tests/gpu/test_docs_commands_gpu.py", "tests/gpu/test_gpu_training.py")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    spread, alone = _ran(out / "gpu-tests.log"), _ran(out / "gpu-tests-multi.log")
    assert "on 2 GPU(s)" in (out / "gpu-tests.log").read_text()
    assert "test_reference_tests_command_runs" in alone and "test_two_gpu_nccl_training" in alone
    assert not alone & spread and "test_update_graph_benchmark_command_runs" in spread


def test_cuda_visible_devices_sets_the_worker_count(tmp_path):
    res, out = _suite(tmp_path, "test_gpu_docs_placeholder", "tests/gpu/test_docs_commands_gpu.py",
                      CUDA_VISIBLE_DEVICES="1")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    log = (out / "gpu-tests.log").read_text()
    # one GPU: no workers and no second phase (the placeholder test skips here: no GPU)
    assert "on 1 GPU(s)" in log and "1 skipped" in log and not (out / "gpu-tests-multi.log").exists()
