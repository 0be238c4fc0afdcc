"""Example-env CUDA sources: signatures match step_kernel_args, and nvcc builds them for sm_90.

No GPU needed: only nvcc (skipped with a reason when it is missing). Each source is rendered
the way the function manager renders it: prelude (launch dims + the env's cuda_constants()),
``#include "core_service.cuh"``, then the env's .cu file.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from example_envs.dummy_env.dummy_env import DummyEnv
from example_envs.tag_continuous.tag_continuous import PHASE_KERNELS as TC_PHASES
from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import PHASE_KERNELS as GW_PHASES
from example_envs.tag_gridworld.tag_gridworld import TagGridWorld
from warp_drive.cuda.compiler import render_source
from warp_drive.cuda.signature import parse_kernel_signatures

CORE_DIR = Path(__file__).resolve().parents[3] / "warp_drive" / "cuda" / "core"

# (id, env factory, num_envs, blocks_per_env[, shared memory per block of the target device])
CASES = [
    ("tag_continuous_partial_1block_48k_device",
     lambda: TagContinuous(num_taggers=10, num_runners=990, use_full_observation=False, num_other_agents_observed=10),
     2000, 1, 48 * 1024),
    ("tag_continuous_partial_1block_64k_device",
     lambda: TagContinuous(num_taggers=10, num_runners=990, use_full_observation=False, num_other_agents_observed=10),
     2000, 1, 64 * 1024),
    ("tag_continuous_full_1block", lambda: TagContinuous(num_taggers=2, num_runners=30), 8, 1),
    ("tag_continuous_partial_1block",
     lambda: TagContinuous(num_taggers=10, num_runners=990, use_full_observation=False, num_other_agents_observed=10),
     2000, 1),
    ("tag_continuous_partial_1024_grid",
     lambda: TagContinuous(num_taggers=93, num_runners=931, use_full_observation=False, num_other_agents_observed=10),
     2000, 1),
    ("tag_continuous_partial_k40_grid_unstaged",
     lambda: TagContinuous(num_taggers=50, num_runners=950, use_full_observation=False, num_other_agents_observed=40),
     4, 1),
    ("tag_continuous_full_forced_grid",
     lambda: TagContinuous(num_taggers=3, num_runners=30, neighbour_search="grid"), 8, 1),
    ("tag_continuous_partial_5blocks",
     lambda: TagContinuous(num_taggers=50, num_runners=4950, use_full_observation=False, num_other_agents_observed=10),
     1, 5),
    ("tag_continuous_full_5blocks", lambda: TagContinuous(num_taggers=50, num_runners=4950), 1, 5),
    ("tag_gridworld_full_1block", lambda: TagGridWorld(num_taggers=4), 2000, 1),
    ("tag_gridworld_partial_1block", lambda: TagGridWorld(num_taggers=4, use_full_observation=False), 16, 1),
    ("tag_gridworld_full_3blocks", lambda: TagGridWorld(num_taggers=2047), 2, 3),
    ("dummy_env_2blocks", lambda: DummyEnv(num_agents=1500), 4, 2),
]

#: env class -> {kernel: its argument specs}: the fused step kernel takes step_kernel_args, each
#: phase kernel its own list.
KERNELS = {
    TagContinuous: {"CudaTagContinuousStep": TagContinuous.step_kernel_args, **TC_PHASES},
    TagGridWorld: {"CudaTagGridWorldStep": TagGridWorld.step_kernel_args, **GW_PHASES},
    DummyEnv: {"CudaDummyEnvStep": DummyEnv.step_kernel_args},
}


def _normalize(name: str) -> str:
    return name.removesuffix("_arr").strip("_").lower()


def _names(specs) -> list[str]:
    return [_normalize(a if isinstance(a, str) else a[0]) for a in specs]


@pytest.mark.parametrize("env_cls", list(KERNELS), ids=lambda c: c.__name__)
def test_kernel_signatures_match_their_argument_lists(env_cls):
    signatures = parse_kernel_signatures(env_cls.cuda_source.read_text())
    for kernel, specs in KERNELS[env_cls].items():
        assert kernel in signatures, f"{kernel} missing from {env_cls.cuda_source.name}"
        assert [_normalize(p.name) for p in signatures[kernel]] == _names(specs), kernel


@pytest.mark.parametrize("phases", [TC_PHASES, GW_PHASES], ids=["tag_continuous", "tag_gridworld"])
def test_phase_kernels_take_a_subsequence_of_the_step_arguments(phases):
    """Each phase kernel takes only some of the fused kernel's arguments, in the same order, and
    together the phases use every one of them."""
    env_cls = TagContinuous if phases is TC_PHASES else TagGridWorld
    full = _names(env_cls.step_kernel_args)
    used: set[str] = set()
    for kernel, specs in phases.items():
        names = _names(specs)
        positions = [full.index(n) for n in names]
        assert positions == sorted(positions) and len(names) < len(full), kernel
        used.update(names)
    assert used == set(full)


def _render(env, num_envs: int, blocks_per_env: int, max_shared_bytes: int = 227 * 1024) -> str:
    return render_source(num_envs, env.num_agents, blocks_per_env, env_source=env.cuda_source,
                         constants=env.cuda_constants(), max_shared_bytes=max_shared_bytes)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_env_kernels_compile_for_sm90(case, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    if not (CORE_DIR / "core_service.cuh").is_file():
        pytest.skip(f"{CORE_DIR / 'core_service.cuh'} is not there yet")
    _, make_env, num_envs, blocks_per_env, *device = case
    env = make_env()
    source = tmp_path / "module.cu"
    source.write_text(_render(env, num_envs, blocks_per_env, *device))
    cmd = [nvcc, "-arch=sm_90", "-cubin", "-O3", "-std=c++17", f"-I{CORE_DIR}",
           f"-I{env.cuda_source.parent}", "-o", str(tmp_path / "module.cubin"), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-4000:]}"
    assert (tmp_path / "module.cubin").stat().st_size > 0
