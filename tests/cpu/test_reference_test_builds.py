"""The self-contained test builds hold what 2.7.1's unit tests launch from them, and the runner of
2.7.1's suite (tools/run_reference_tests.py) reads pytest's outcomes right. No GPU needed; the
builds need nvcc (skipped with a reason without it).

2.7.1's ``test_tag_gridworld_step_cuda.py`` loads ``cuda_bin/test_build.fatbin`` and launches
``CudaTagGridWorldStep`` with 2.7.1's parameter list for 2 envs of 4 taggers and a runner.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from example_envs.tag_gridworld.tag_gridworld import TagGridWorld
from warp_drive.compat271 import main_files
from warp_drive.cuda import compiler
from warp_drive.cuda.signature import parse_kernel_signatures
from warp_drive.errors import CUDACompileError

ROOT = Path(__file__).resolve().parents[2]
INCLUDES = ROOT / "warp_drive" / "cuda_includes"
BUILDS = ["test_build.cu", "test_build_multiblocks.cu"]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

#: 2.7.1's CudaTagGridWorldStep parameters: (name, C type, pointer).
PARAMS_271 = [
    ("loc_x_arr", "int", True), ("loc_y_arr", "int", True), ("actions_arr", "int", True), ("done_arr", "int", True),
    ("rewards_arr", "float", True), ("observations_arr", "float", True), ("wall_hit_penalty", "float", False),
    ("tag_reward_for_tagger", "float", False), ("tag_penalty_for_runner", "float", False),
    ("step_cost_for_tagger", "float", False), ("use_full_observation", "bool", False),
    ("world_boundary", "int", False), ("timestep_arr", "int", True), ("episode_length", "int", False),
]


@pytest.mark.parametrize("main", BUILDS)
def test_gridworld_constants_are_those_of_the_env_the_tests_build(main):
    text = (INCLUDES / main).read_text()
    env = TagGridWorld(num_taggers=4)
    assert "constexpr int wkNumberEnvs = 2;" in text and f"constexpr int wkNumberAgents = {env.num_agents};" in text
    prelude = compiler.render_prelude(2, env.num_agents, 1, env.cuda_constants()).splitlines()
    constants = [line for line in prelude if line.startswith(("constexpr", "__device__")) and " k" in line]
    assert len(constants) == len(env.cuda_constants())
    missing = [line for line in constants if line not in text]
    assert not missing, f"{main} lacks (or changed) {missing}"


@needs_nvcc
@pytest.mark.parametrize("main", BUILDS)
def test_test_builds_hold_the_2_7_1_gridworld_kernel_and_compile(main, tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    built = main_files.compile_main_file(INCLUDES / main, None, "sm_90")
    assert built.binary.stat().st_size > 0
    signatures = parse_kernel_signatures(built.source)
    assert [(p.name, p.ctype, p.is_pointer) for p in signatures["CudaTagGridWorldStep"]] == PARAMS_271
    assert "testkernel" in signatures
    assert "__constant__ int kIndexToActionArr" in built.source  # 2.7.1's test fills it by name


@needs_nvcc
def test_the_2_7_1_kernel_refuses_a_partial_observation_build(tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    env = TagGridWorld(num_taggers=4, use_full_observation=False)
    source = ROOT / "example_envs" / "tag_gridworld" / "tag_gridworld_step_271.cu"
    unit = compiler.render_source(2, env.num_agents, 1, env_source=source, constants=env.cuda_constants())
    with pytest.raises(CUDACompileError, match="build it with kUseFullObservation = true"):
        compiler.compile_cubin(unit, "sm_90", include_dirs=compiler.env_include_dirs(source))


# --------------------------------------------------------------------------- the suite's runner
def _runner():
    spec = importlib.util.spec_from_file_location("run_reference_tests", ROOT / "tools" / "run_reference_tests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_runner_reads_expected_tests_from_the_source(tmp_path):
    folder = tmp_path / "tests" / "pkg"
    folder.mkdir(parents=True)
    (folder / "test_a.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test_x(self): pass\n    def helper(self): pass\n"
        "    def test_y(self): pass\ndef test_z(): pass\ndef other(): pass\n")
    (folder / "helpers.py").write_text("def test_not_collected(): pass\n")
    assert _runner().expected_tests(tmp_path, "tests/pkg") == {"tests/pkg/test_a.py": ["T::test_x", "T::test_y", "test_z"]}


def test_runner_counts_outcomes_per_file():
    runner = _runner()
    log = "\n".join([
        "tests/p/test_a.py::T::test_x PASSED                                        [ 33%]",
        "tests/p/test_a.py::T::test_y FAILED                                        [ 66%]",
        "tests/p/test_b.py::test_z SKIPPED (no GPU)                                 [100%]",
        "ERROR tests/p/test_c.py::TestC - ImportError: no module",
        "tests/p/test_d.py::test_w ",  # killed before its outcome
    ])
    outcomes, broken = runner.parse_outcomes(log)
    assert outcomes == {"tests/p/test_a.py::T::test_x": "passed", "tests/p/test_a.py::T::test_y": "failed",
                        "tests/p/test_b.py::test_z": "skipped"}
    assert broken == {"tests/p/test_c.py"}
    a = runner.file_result("tests/p/test_a.py", ["T::test_x", "T::test_y"], outcomes, broken)
    assert (a["passed"], a["failed"], a["all_passed"]) == (1, 1, False)
    c = runner.file_result("tests/p/test_c.py", ["TestC::test_q"], outcomes, broken)
    assert (c["error"], c["all_passed"]) == (1, False)
    d = runner.file_result("tests/p/test_d.py", ["test_w"], outcomes, broken)
    assert d["not_run"] == 1 and d["per_test"] == {"test_w": "not_run"}
    assert runner.gpu_tag("NVIDIA H100 80GB HBM3") == "H100" and runner.gpu_tag("NVIDIA H200") == "H200"
