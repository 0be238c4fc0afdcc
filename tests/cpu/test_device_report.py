"""``python -m warp_drive.cuda.device``: a readable table (and ``--json``) of what README promises
(GPU and architecture, NVIDIA driver, CUDA, pycuda, nvcc), on a machine without a GPU or pycuda."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from warp_drive.cuda import compiler
from warp_drive.errors import CUDACompileError
from warp_drive.utils import device

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_gpu_stack(monkeypatch):
    """No pycuda, no nvcc, no GPU, no driver, whatever this machine has."""
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "_nvidia_driver", lambda: None)

    def no_nvcc():
        raise CUDACompileError("nvcc was not found")

    monkeypatch.setattr(compiler, "find_nvcc", no_nvcc)


def test_report_without_gpu_pycuda_or_nvcc(no_gpu_stack, capsys):
    assert device.main([]) == 0
    out = capsys.readouterr().out
    for label in ("warp_drive", "PyTorch", "GPU", "NVIDIA driver", "pycuda", "nvcc", "kernel cache", "default backend"):
        assert label in out
    assert "none visible to PyTorch" in out and "not installed" in out and "cpu (NumPy steps" in out
    assert 'pip install -e ".[cuda]"' in out and "from a clone" in out
    assert "warpdrive-marl[" not in out  # the package is not on any index
    assert "nvcc was not found" in out


def test_json_report_without_gpu(no_gpu_stack, capsys):
    device.main(["--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["gpus"] == [] and report["pycuda"] is None and report["nvcc"] is None
    assert report["backend"] == "cpu" and report["torch"] == torch.__version__
    assert any("pycuda is not installed" in p for p in report["problems"])


def test_report_with_a_gpu_names_its_architecture_driver_and_nvcc(monkeypatch, tmp_path, capsys):
    props = SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132, total_memory=80 * 2**30)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(device, "_nvidia_driver", lambda: "550.54.15")
    monkeypatch.setattr(device, "_pycuda", lambda: {"pycuda": "2025.1", "driver_cuda": "12.4"})
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("WARP_DRIVE_NVCC", str(fake))
    compiler.nvcc_version.cache_clear()
    device.main([])
    out = capsys.readouterr().out
    assert "NVIDIA H100 80GB HBM3, 80.0 GiB, 132 SMs" in out
    assert "sm_90 (compute capability 9.0)" in out
    assert "550.54.15 (supports CUDA 12.4)" in out and "(CUDA 12.4)" in out
    assert f"{fake} (CUDA 12.4)" in out and "2025.1" in out
    assert "pycuda" in out.split("default backend")[1] and "To use the GPU" not in out
    report = device.device_report()
    assert report["gpus"][0]["arch"] == "sm_90" and report["problems"] == [] and report["backend"] == "pycuda"
    compiler.nvcc_version.cache_clear()


def test_module_runs_as_a_script():
    proc = subprocess.run([sys.executable, "-m", "warp_drive.cuda.device", "--json"], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "gpus" in json.loads(proc.stdout)
