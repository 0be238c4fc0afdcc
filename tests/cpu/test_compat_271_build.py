"""WarpDrive 2.7.1's kernels (``compat_271.cuh``) are compiled only when 2.7.1 code asks for them.

The rule (:mod:`warp_drive.compat271.kernels`), decided before anything is compiled: a rendered
unit includes the header when its code names a 2.7.1 symbol (outside comments, in the env source,
a header it includes by a quoted path, or the user code) or the build passes ``compat_271=True``;
``core_service.cuh`` never includes it; the shipped self-contained 2.7.1 units include it
themselves. A build with it and one without have different cache keys, and a 2.7.1 kernel name
launched from a module built without it is a typed error naming the fix. No GPU: a stand-in nvcc
and pycuda module loader for the function manager, the real nvcc (skipped without it) to look
into the binaries.
"""

from __future__ import annotations

import re
import shutil
import sys
import types

import pytest
import torch

from tests.helpers.legacy_env import CUDA_SOURCE
from warp_drive.compat271 import kernels as k271
from warp_drive.compat271.main_files import compile_main_file
from warp_drive.cuda import compiler, core_dir, project_root
from warp_drive.errors import DataNotFoundError, KernelNotBuiltError

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
PLAIN = 'extern "C" __global__ void plain(float* x) { x[threadIdx.x] += wkNumberAgents; }'
HEADER_TEXT = (core_dir() / k271.HEADER).read_text()


def _uses(name: str) -> str:
    """A kernel that names ``name`` once (a call, a constant or a launch-free reference)."""
    return f'extern "C" __global__ void user(int* x) {{ x[0] = sizeof(&{name}) > 0 ? 1 : 0; }}'


# --------------------------------------------------------------------------- the rule on text
def test_names_are_every_2_7_1_name_the_header_defines():
    text = re.sub(r"//[^\n]*", " ", HEADER_TEXT)
    defined = set(re.findall(r'extern "C" __global__ void (\w+)\s*\(', text))
    defined |= set(re.findall(r"__device__\s+(?:__forceinline__\s+)?\w+\s+(\w+)\s*\(", text))
    defined |= set(re.findall(r"constexpr int (\w+)\s*=", text))
    public = {n for n in defined if not n.startswith("wk") or n == "wkMaxBlocks"}
    assert public == set(k271.NAMES)
    assert set(k271.COMPAT_FUNCTIONS) == set(re.findall(r'extern "C" __global__ void (\w+)\s*\(', text))


def test_core_service_does_not_include_the_header():
    assert not k271.includes_header((core_dir() / "core_service.cuh").read_text())
    assert k271.includes_header('#include "compat_271.cuh"') and k271.includes_header('  # include "../core/compat_271.cuh"')
    assert not k271.includes_header('// #include "compat_271.cuh"')


def test_plain_code_is_rendered_without_the_header():
    assert not k271.includes_header(compiler.render_source(2, 3, 1))
    assert not k271.includes_header(compiler.render_source(2, 3, 1, extra_code=PLAIN))
    comment_only = PLAIN + "\n// like 2.7.1's getEnvID(blockIdx.x) /* or __sync_env_threads() */\n"
    assert not k271.includes_header(compiler.render_source(2, 3, 1, extra_code=comment_only))


@pytest.mark.parametrize("name", k271.NAMES)
def test_code_that_names_a_2_7_1_symbol_gets_the_header(name):
    source = compiler.render_source(2, 3, 1, extra_code=_uses(name))
    assert k271.includes_header(source)
    assert source.index(k271.INCLUDE_LINE) == source.index('#include "core_service.cuh"\n') + len('#include "core_service.cuh"\n')
    assert k271.names_used(_uses(name)) == [name]


def test_asking_for_it_includes_the_header_and_changes_the_text():
    with_it = compiler.render_source(2, 3, 1, extra_code=PLAIN, compat_271=True)
    without = compiler.render_source(2, 3, 1, extra_code=PLAIN)
    assert k271.includes_header(with_it) and with_it.replace(k271.INCLUDE_LINE, "") == without


def test_an_env_source_and_the_headers_it_includes_are_read(tmp_path):
    assert k271.includes_header(compiler.render_source(2, 3, 1, env_source=CUDA_SOURCE))  # a 2.7.1-style env
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "helpers.cuh").write_text("__device__ int env_of(int b) { return getEnvID(b); }\n")
    step = tmp_path / "env" / "step.cu"
    step.parent.mkdir()
    step.write_text('#include "../shared/helpers.cuh"\n' + PLAIN + "\n")
    assert k271.includes_header(compiler.render_source(2, 3, 1, env_source=step))
    (tmp_path / "shared" / "helpers.cuh").write_text("__device__ int env_of(int b) { return wkEnvId(); }\n")
    assert not k271.includes_header(compiler.render_source(2, 3, 1, env_source=step))


def test_no_example_env_and_the_shipped_2_7_1_units_both_as_the_rule_says():
    import example_envs  # noqa: F401 - registers the example envs
    from warp_drive.cuda.check_build import main_files_to_check, sources_to_check

    for case in sources_to_check():
        text = compiler.render_source(2, case.num_agents, 1, env_source=case.source, constants=case.constants)
        assert not k271.includes_header(text), f"{case.label} uses none of 2.7.1's names, yet gets {k271.HEADER}"
    mains = main_files_to_check()
    assert [m.name for m in mains] == ["test_build.cu", "test_build_multiblocks.cu"]
    assert all(k271.includes_header(m.read_text()) for m in mains)


# --------------------------------------------------------------------------- cache keys and binaries
@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """$WARP_DRIVE_NVCC -> a script writing a fake cubin; a private cache under tmp_path."""
    script = tmp_path / "nvcc"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 12.4, V12.4.0"; exit 0; fi\n'
        'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done\n'
        'printf "FAKE-CUBIN" > "$out"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("WARP_DRIVE_NVCC", str(script))
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("WARP_DRIVE_NVCC_OPTIONS", raising=False)
    compiler.nvcc_version.cache_clear()
    yield script
    compiler.nvcc_version.cache_clear()


def test_builds_with_and_without_the_header_have_different_cache_keys(fake_nvcc):
    without = compiler.compile_cubin(compiler.render_source(2, 3, 1, extra_code=PLAIN), "sm_90")
    with_it = compiler.compile_cubin(compiler.render_source(2, 3, 1, extra_code=PLAIN, compat_271=True), "sm_90")
    assert without != with_it
    assert compiler.compile_cubin(compiler.render_source(2, 3, 1, extra_code=PLAIN), "sm_90") == without


@needs_nvcc
def test_the_binaries_hold_2_7_1_kernels_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    plain = compiler.compile_cubin(compiler.render_source(2, 3, 1, extra_code=PLAIN), "sm_90").read_bytes()
    asked = compiler.compile_cubin(compiler.render_source(2, 3, 1, extra_code=PLAIN, compat_271=True), "sm_90")
    assert b"reset_when_done" in plain and b"plain" in plain  # the core layer and the user's kernel
    assert not any(name.encode() in plain for name in k271.COMPAT_FUNCTIONS)
    assert all(name.encode() in asked.read_bytes() for name in k271.COMPAT_FUNCTIONS)
    shipped = compile_main_file(project_root() / "warp_drive" / "cuda_includes" / "test_build.cu", None, "sm_90")
    assert all(name.encode() in shipped.binary.read_bytes() for name in k271.COMPAT_FUNCTIONS)


# --------------------------------------------------------------------------- the function manager
class _LogicError(Exception):
    pass


class _Function:
    """Stands in for a pycuda Function (never launched here)."""

    def prepare(self, codes: str) -> None:
        self.codes = codes


class _Module:
    """Stands in for a loaded pycuda module: every kernel name resolves (the manager decides)."""

    def get_function(self, name: str) -> _Function:
        return _Function()

    def get_global(self, name: str):
        raise _LogicError(name)


@pytest.fixture
def fm(monkeypatch, fake_nvcc):
    """A PyCUDAFunctionManager whose nvcc, pycuda driver and device are stand-ins."""
    from warp_drive.managers import pycuda_function_manager as pfm

    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.driver",
                        types.SimpleNamespace(module_from_file=lambda path: _Module(), LogicError=_LogicError))
    monkeypatch.setattr(pfm, "init_cuda", lambda device_id=None: None)
    monkeypatch.setattr(pfm, "device_attributes", lambda d: {"max_threads_per_block": 1024, "multiprocessor_count": 132,
                                                              "major": 9, "minor": 0})
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    return lambda: pfm.PyCUDAFunctionManager(num_agents=5, num_envs=2)


def test_a_module_without_the_header_names_the_fix_for_2_7_1_kernels(fm):
    manager = fm()
    manager.load_cuda_from_source_code(PLAIN)
    assert not manager.has_compat_271_kernels()
    assert not any(manager.is_initialized(n) or manager.has_function(n) for n in k271.COMPAT_FUNCTIONS)
    assert manager.is_initialized("reset_when_done") and manager.has_function("plain")
    for call in (lambda: manager.get_function("reset_in_float_when_done_2d"),
                 lambda: manager.initialize_functions(["log_one_step_in_int"]),
                 lambda: manager.launch("init_random", [1])):
        with pytest.raises(KernelNotBuiltError, match=r"compat_271=True") as err:
            call()
        assert isinstance(err.value, DataNotFoundError) and "compat_271.cuh" in str(err.value)
    with pytest.raises(DataNotFoundError) as other:  # any other unknown name: the usual error
        manager.get_function("nothing_here")
    assert not isinstance(other.value, KernelNotBuiltError)


@pytest.mark.parametrize("how", ["asked", "named"])
def test_a_module_with_the_header_loads_2_7_1_kernels_by_default(fm, how):
    manager = fm()
    if how == "asked":
        manager.load_cuda_from_source_code(PLAIN, compat_271=True)
    else:
        manager.load_cuda_from_source_code(_uses("getAgentID"))
    assert manager.has_compat_271_kernels()
    assert all(manager.is_initialized(n) and manager.has_function(n) for n in k271.COMPAT_FUNCTIONS)
    assert manager.get_function("reset_in_float_when_done_3d").codes == "PPPiii"


def test_an_env_is_compiled_with_the_header_only_when_its_source_asks(fm, tmp_path):
    plain_env = tmp_path / "plain_step.cu"
    plain_env.write_text(PLAIN + "\n")
    manager = fm()
    manager.compile_and_load_cuda(env_source=plain_env)
    assert not manager.has_compat_271_kernels() and not k271.includes_header(manager.source)
    legacy = fm()
    legacy.compile_and_load_cuda(env_source=CUDA_SOURCE)  # a 2.7.1-style env: getEnvID, __sync_env_threads
    assert legacy.has_compat_271_kernels() and legacy.is_initialized("log_one_step_in_float")
    asked = fm()
    asked.compile_and_load_cuda(env_source=plain_env, compat_271=True)
    assert asked.has_compat_271_kernels()


def test_the_cpu_backend_always_has_the_2_7_1_twins():
    from warp_drive.managers.function_manager import CPUFunctionManager

    manager = CPUFunctionManager(num_agents=3, num_envs=2)
    manager.initialize_default_functions()
    assert manager.has_compat_271_kernels()
    assert all(manager.is_initialized(n) for n in k271.COMPAT_FUNCTIONS)
