"""Rendering and the content-addressed kernel cache (nvcc runs here without a GPU)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import warp_drive
from warp_drive.cuda import compiler
from warp_drive.errors import ConfigError, CUDACompileError

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def test_prelude_holds_every_constant():
    text = compiler.render_prelude(4, 110, 1, {"kMaxSpeed": 1.5, "kLevels": 20, "kUse": True, "kTable": (1, -1, 0), "kF": (0.5, 2.0)})
    for line in ("constexpr int wkNumberEnvs = 4;", "constexpr int wkNumberAgents = 110;", "constexpr int wkBlocksPerEnv = 1;",
                 "constexpr int wkThreadsPerBlock = 110;", "constexpr int wkMaxSharedBytesPerBlock = 49152;",
                 "constexpr float kMaxSpeed = 1.5f;", "constexpr int kLevels = 20;", "constexpr bool kUse = true;",
                 "__device__ constexpr int kTable[3] = {1, -1, 0};", "__device__ constexpr float kF[2] = {0.5f, 2.0f};"):
        assert line in text


@pytest.mark.parametrize("bad", [{"1x": 1}, {"k": float("nan")}, {"k": 2**40}, {"k": "text"}])
def test_bad_constants(bad):
    with pytest.raises(ConfigError):
        compiler.render_prelude(1, 1, 1, bad)


def test_missing_env_source():
    with pytest.raises(ConfigError, match="does not exist"):
        compiler.render_source(1, 1, 1, env_source="/nonexistent/env.cu")


@needs_nvcc
def test_cache_is_keyed_by_content_and_outside_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    src = compiler.render_source(2, 3, 1, extra_code='extern "C" __global__ void k(float* a) { a[0] = wkNumberEnvs; }')
    first = compiler.compile_cubin(src, "sm_90")
    assert first.is_file() and first.parent == tmp_path / "cache"
    mtime = first.stat().st_mtime_ns
    assert compiler.compile_cubin(src, "sm_90") == first and first.stat().st_mtime_ns == mtime  # hit
    other = compiler.compile_cubin(compiler.render_source(5, 3, 1, extra_code=src.split("\n")[-2]), "sm_90")
    assert other != first  # num_envs changed -> new key
    package = Path(warp_drive.__file__).parent
    assert not list(package.rglob("*.cubin"))
    monkeypatch.setenv("WARP_DRIVE_NVCC_OPTIONS", "-lineinfo")  # extra options are part of the key
    with_lines = compiler.compile_cubin(src, "sm_90")
    assert with_lines != first and compiler.last_build_compiled


@needs_nvcc
def test_compile_error_shows_command_and_stderr(tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    src = compiler.render_source(1, 1, 1, extra_code='extern "C" __global__ void k(float* a) { a[0] = undefined_symbol; }')
    with pytest.raises(CUDACompileError) as info:
        compiler.compile_cubin(src, "sm_90")
    assert "nvcc" in str(info.value) and "-arch=sm_90" in str(info.value) and "undefined_symbol" in str(info.value)


def test_import_has_no_side_effects(tmp_path):
    code = (
        "import sys, warp_drive, warp_drive.env.env_wrapper, warp_drive.managers.pycuda_function_manager;"
        "import torch; assert not torch.cuda.is_initialized(), 'cuda initialized';"
        "assert 'pycuda.driver' not in sys.modules, 'pycuda imported'"
    )
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    env.pop("WARP_DRIVE_CACHE_DIR", None)
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=Path(__file__).parents[2])
    assert not any(tmp_path.rglob("*")), "importing warp_drive wrote files"


def test_pycuda_backend_without_pycuda_says_what_to_install(monkeypatch):
    from warp_drive.errors import DeviceUnavailableError
    from warp_drive.utils import device

    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(DeviceUnavailableError, match=r'from a clone of the warp_drive repository run `pip install -e "\.\[cuda\]"`'):
        device.init_cuda()


@needs_nvcc
def test_concurrent_processes_compile_once(tmp_path):
    """Two processes asking for the same kernel: one runs nvcc, the other waits and hits the cache."""
    code = (
        "import sys; from warp_drive.cuda import compiler as c;"
        "src = c.render_source(3, 3, 1, extra_code='extern \"C\" __global__ void k(float* a) { a[0] = 7; }');"
        "p = c.compile_cubin(src, 'sm_90'); print(int(c.last_build_compiled), p)"
    )
    env = dict(os.environ, WARP_DRIVE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")])))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(int(o[0]) for o in outs) == [0, 1], outs  # exactly one compiled
    assert outs[0][1] == outs[1][1]
