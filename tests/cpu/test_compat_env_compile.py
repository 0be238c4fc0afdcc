"""The 2.7.1-style fixture kernel (extern "C" block, getEnvID/getAgentID, __sync_env_threads,
wkNumberAgents/wkNumberEnvs) compiles with nvcc against the core layer, for one and two blocks
per env, rendered as the function manager renders an env registered by path. No GPU needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.legacy_env import CUDA_SOURCE
from warp_drive.cuda.compiler import render_source
from warp_drive.cuda.signature import parse_kernel_signatures

CORE_DIR = Path(__file__).resolve().parents[2] / "warp_drive" / "cuda" / "core"


def test_fixture_kernel_signature_is_parsed_from_its_extern_c_block():
    params = parse_kernel_signatures(CUDA_SOURCE.read_text())["CudaLegacyCrowdStep"]
    assert [p.name for p in params][:3] == ["loc_x_arr", "loc_y_arr", "actions_arr"]
    assert [(p.ctype, p.is_pointer) for p in params[-5:]] == [
        ("int", False), ("float", False), ("float", False), ("int", False), ("int", False)]


@pytest.mark.parametrize("num_envs,num_agents,blocks_per_env", [(3, 5, 1), (3, 5, 2), (2, 7, 2)])
def test_fixture_kernel_compiles_for_sm90(tmp_path, num_envs, num_agents, blocks_per_env):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    if not (CORE_DIR / "compat_271.cuh").is_file():
        pytest.skip("the 2.7.1 kernel-side helpers (warp_drive/cuda/core/compat_271.cuh) are not there yet")
    source = tmp_path / "module.cu"
    source.write_text(render_source(num_envs, num_agents, blocks_per_env, env_source=CUDA_SOURCE, constants={},
                                    max_shared_bytes=48 * 1024))
    cmd = [nvcc, "-arch=sm_90", "-cubin", "-O3", "-std=c++17", f"-I{CORE_DIR}", f"-I{CUDA_SOURCE.parent}",
           "-o", str(tmp_path / "module.cubin"), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-4000:]}"
    assert (tmp_path / "module.cubin").stat().st_size > 0
