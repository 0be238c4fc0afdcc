"""WarpDrive 2.7.1 compatibility of the CUDA / managers layer, without a GPU.

Signature parsing of 2.7.1-style sources, the pycuda-style kernel call (with a stand-in pycuda
function), the env-barrier geometry checks, ``_compile``'s binary aliases (nvcc runs here; the
module loader is a stand-in), the NumPy twins of 2.7.1's kernels, constructor orders and the
2.7.1 import paths. The same code paths on a GPU: tests/gpu/test_compat_core.py.
"""

from __future__ import annotations

import shutil
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from warp_drive.compat271 import main_files
from warp_drive.cuda import compiler, project_root
from warp_drive.cuda.signature import KernelParam, functions_calling, kernel_linkage, parse_kernel_signatures
from warp_drive.errors import ConfigError, DataNotFoundError, GeometryError, KernelSignatureError

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

TUTORIAL_1A_SOURCE = """
// A function to demonstrate how to manipulate data on the GPU.
extern "C"{
    __global__ void cuda_increment(
            float* data,
            int num_agents
    )
    {
        int env_id = blockIdx.x;
        int agent_id = threadIdx.x;
        if (agent_id < num_agents){
            int array_index = env_id * num_agents + agent_id;
            data[array_index] += env_id + agent_id;
        }
    }
}
"""

INCLUDES = project_root() / "warp_drive" / "cuda_includes"


# --------------------------------------------------------------------------- parsing
def test_extern_c_block_kernel_is_parsed_with_c_linkage():
    sigs = parse_kernel_signatures(TUTORIAL_1A_SOURCE)
    assert sigs == {"cuda_increment": [KernelParam("float", "data", True), KernelParam("int", "num_agents", False)]}
    assert kernel_linkage(TUTORIAL_1A_SOURCE) == {"cuda_increment": True}


def test_linkage_of_each_declaration_style():
    src = """
    extern "C" __global__ void a(int* x) {}
    __global__ void b(int* x) {}              // C++ linkage: mangled name
    extern "C" { namespace {} __global__ void c(float y) {} }
    extern "C" __global__ void __launch_bounds__(128) d(int n) {}
    """
    assert kernel_linkage(src) == {"a": True, "b": False, "c": True, "d": True}


def test_declarations_with_defaults_and_unnamed_parameters_and_definition_names_win():
    src = """
    extern "C" __global__ void reset_2d(float* data, const float* ref, int* done, int feature_dim, int force_reset = 0);
    extern "C" __global__ void proto(float*, int*, unsigned int, long long);
    extern "C" __global__ void reset_2d(float* d, const float* r, int* dn, int f, int force) { }
    """
    sigs = parse_kernel_signatures(src)
    assert [p.name for p in sigs["reset_2d"]] == ["d", "r", "dn", "f", "force"]
    assert "".join(p.code for p in sigs["proto"]) == "PPIq"
    assert [p.ctype for p in sigs["proto"]] == ["float", "int", "unsigned int", "long long"]


def test_barrier_users_are_found_through_device_functions():
    src = """
    __device__ void helper() { __sync_env_threads(); }
    __device__ int unrelated() { printf("{ not a block"); return 0; }  // __sync_env_threads() in a comment
    extern "C" __global__ void direct(float* x) { if (x) { __sync_env_threads(); } }
    extern "C" { __global__ void indirect(float* x) { helper(); } }
    extern "C" __global__ void plain(float* x) { unrelated(); }
    #define MACRO(x) { __sync_env_threads(); }
    """
    assert functions_calling(src, "__sync_env_threads") == {"helper", "direct", "indirect"}


def test_dummy_test_kernel_uses_the_barrier():
    src = (project_root() / "example_envs" / "dummy_env" / "test_step.cu").read_text()
    assert "testkernel" in functions_calling(src, "__sync_env_threads")
    params = parse_kernel_signatures(src)["testkernel"]
    assert "".join(p.code for p in params) == "PPPPfiii"
    assert [p.name for p in params] == ["x", "y", "done", "actions", "multiplier", "target", "step", "episode_length"]


# --------------------------------------------------------------------------- pycuda-style calls
class _FakeFunction:
    """Stands in for a pycuda Function: records launches."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.texrefs: list = []
        self._launch_kernel = lambda *a: self.calls.append(("fast", *a))

    def prepare(self, codes: str) -> None:
        self.arg_format = codes

    def __call__(self, *args, **kwargs) -> None:  # pycuda's untyped call
        self.calls.append(("untyped", args, kwargs))


@pytest.fixture
def fake_pack(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda._pvt_struct", types.SimpleNamespace(pack=struct.pack))


class _Holder:
    def __init__(self, address: int) -> None:
        self.gpudata = address


def _kernel(source: str, name: str, **kw):
    from warp_drive.managers.pycuda_function_manager import _Kernel

    params = parse_kernel_signatures(source)[name]
    function = _FakeFunction()
    return _Kernel(name, function, "".join(p.code for p in params), params=params, **kw), function


def test_typed_call_converts_by_signature(fake_pack):
    kernel, function = _kernel(TUTORIAL_1A_SOURCE, "cuda_increment", shared_bytes=0)
    kernel(_Holder(0x1000), np.int32(3), block=(3, 1, 1), grid=(2, 1))
    kernel(0x2000, 5, block=[3, 1, 1], grid=[2, 1])  # raw address, Python int, lists
    assert function.calls == [
        ("fast", (2, 1), (3, 1, 1), struct.pack("Pi", 0x1000, 3), 0, None),
        ("fast", (2, 1), (3, 1, 1), struct.pack("Pi", 0x2000, 5), 0, None),
    ]


def test_typed_call_default_grid_shared_memory_and_stream(fake_pack):
    kernel, function = _kernel(TUTORIAL_1A_SOURCE, "cuda_increment", shared_bytes=256)
    kernel(None, True, block=(4,), stream="s")
    kernel(None, 1, block=(4,), shared=64)
    assert function.calls[0] == ("fast", (1, 1), (4,), struct.pack("Pi", 0, 1), 256, "s")
    assert function.calls[1][4] == 64


@pytest.mark.parametrize(
    "args, match",
    [
        ((_Holder(1),), "takes 2 arguments, got 1"),
        ((_Holder(1), 2.5), "expects an integer, got float 2.5"),
        ((_Holder(1), np.float32(2)), "expects an integer"),
        ((_Holder(1), torch.zeros(1)), "expects a scalar, got a tensor"),
        (("text", 1), "expects an array"),
        ((torch.zeros(3, dtype=torch.float64), 1), "expects float data, got a torch.float64 tensor"),
        ((torch.zeros(3), 1), "tensor on cpu"),
        ((_Holder(1), 2**40), "cannot pass the arguments"),
    ],
)
def test_typed_call_rejects_wrong_arguments(fake_pack, args, match):
    kernel, function = _kernel(TUTORIAL_1A_SOURCE, "cuda_increment")
    with pytest.raises(KernelSignatureError, match=match):
        kernel(*args, block=(3, 1, 1), grid=(2, 1))
    assert function.calls == []


def test_typed_call_needs_a_block(fake_pack):
    kernel, _ = _kernel(TUTORIAL_1A_SOURCE, "cuda_increment")
    with pytest.raises(ConfigError, match="block=fm.block"):
        kernel(_Holder(1), 2, grid=(2, 1))
    with pytest.raises(GeometryError):
        kernel(_Holder(1), 2, block=(0, 1, 1))


def test_float_parameter_takes_ints_and_numpy_floats(fake_pack):
    src = 'extern "C" __global__ void k(float m, double d, bool flag) {}'
    kernel, function = _kernel(src, "k")
    kernel(2, np.float32(0.5), np.int32(1), block=(1, 1, 1))
    assert function.calls[0][3] == struct.pack("fd?", 2.0, 0.5, True)


def test_untyped_call_goes_to_pycuda_with_pointers_and_32_bit_scalars(fake_pack):
    from warp_drive.managers.pycuda_function_manager import _Kernel

    function = _FakeFunction()
    kernel = _Kernel("foreign", function, None)
    t = torch.zeros(4)
    kernel(t, 3, 2.5, True, np.int64(7), 2**40, block=(5, 1, 1), grid=(2, 1))
    (_, args, kwargs), = function.calls
    assert args[0].gpudata == t.data_ptr()
    assert (type(args[1]), type(args[2]), type(args[3])) == (np.int32, np.float32, np.int32)
    assert args[4] == np.int64(7) and type(args[5]) is np.uintp
    assert kwargs == {"grid": (2, 1), "block": (5, 1, 1), "stream": None, "shared": 0}
    kernel.launch((2, 1), (5, 1, 1), None, [t, 1])  # the internal path falls back the same way
    assert function.calls[1][1][0].gpudata == t.data_ptr()


# --------------------------------------------------------------------------- env barrier geometry
def _check(grid, block=(128, 1, 1), bpe=2, envs=4, resident=1000):
    from warp_drive.managers.pycuda_function_manager import check_env_barrier_geometry

    check_env_barrier_geometry("Step", grid, block, bpe, envs, resident, (envs * bpe, 1))


def test_barrier_geometry_accepts_whole_envs_that_fit():
    _check((8, 1))
    _check((4, 1))  # the first two envs
    _check((9, 1))  # a block beyond the envs only syncs itself
    _check((3, 1), bpe=1)  # one block per env: a plain __syncthreads
    _check((8, 1), resident=None)  # capacity unknown: not checked


@pytest.mark.parametrize(
    "grid, resident, match",
    [
        ((8, 2), 1000, "1-D grid such as grid=\\(8, 1\\)"),
        ((3, 1), 1000, "only part of an env's blocks"),
        ((8, 1), 6, "holds at most 6 blocks of 128 threads.*num_envs <= 3"),
    ],
)
def test_barrier_geometry_refuses_grids_that_could_hang(grid, resident, match):
    with pytest.raises(GeometryError, match=match):
        _check(grid, resident=resident)


def test_blocks_per_sm_estimate():
    from warp_drive.managers.pycuda_function_manager import estimate_blocks_per_sm

    h100 = dict(max_threads_per_sm=2048, max_blocks_per_sm=32, registers_per_sm=65536, shared_bytes_per_sm=233472)
    assert estimate_blocks_per_sm(1024, 32, 0, **h100) == 2  # threads bound
    assert estimate_blocks_per_sm(32, 16, 0, **h100) == 32  # block-count bound
    assert estimate_blocks_per_sm(256, 128, 0, **h100) == 2  # registers: 128 * 256 = 32768 per block
    assert estimate_blocks_per_sm(64, 16, 100 * 1024, **h100) == 2  # shared memory (+1 KiB reserve)
    assert estimate_blocks_per_sm(1024, 255, 0, **h100) == 0  # does not fit at all


def test_barrier_check_runs_once_per_geometry(fake_pack):
    seen = []
    kernel, function = _kernel(TUTORIAL_1A_SOURCE, "cuda_increment",
                               barrier_check=lambda k, g, b, s: seen.append((g, b, s)))
    for _ in range(3):
        kernel(_Holder(1), 2, block=(3, 1, 1), grid=(2, 1))
    kernel(_Holder(1), 2, block=(3, 1, 1), grid=(4, 1))
    assert seen == [((2, 1), (3, 1, 1), 0), ((4, 1), (3, 1, 1), 0)]
    assert len(function.calls) == 4


# --------------------------------------------------------------------------- _compile and binaries
class _FakeModule:
    def __init__(self, path: str) -> None:
        self.path = path

    def get_function(self, name: str) -> _FakeFunction:
        if name == "not_there":
            raise _LogicError(name)
        return _FakeFunction()

    def get_global(self, name: str):
        raise _LogicError(name)


class _LogicError(Exception):
    pass


@pytest.fixture
def cpu_pycuda_fm(monkeypatch, fake_pack, tmp_path):
    """A PyCUDAFunctionManager whose device and pycuda driver are stand-ins."""
    from warp_drive.managers import pycuda_function_manager as pfm

    loaded: list[str] = []

    def module_from_file(path: str) -> _FakeModule:
        loaded.append(path)
        return _FakeModule(path)

    driver = types.SimpleNamespace(module_from_file=module_from_file, LogicError=_LogicError)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    monkeypatch.setattr(pfm, "init_cuda", lambda device_id=None: None)
    monkeypatch.setattr(pfm, "device_attributes", lambda d: {"max_threads_per_block": 1024, "multiprocessor_count": 132,
                                                              "major": 9, "minor": 0})
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(pfm, "_occupancy_blocks_per_sm", lambda b, k, t, s: None)
    monkeypatch.setattr(pfm.PyCUDAFunctionManager, "_estimate_blocks_per_sm", lambda self, f, t, s: 2)
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))

    def make(num_agents=5, num_envs=2, blocks_per_env=1):
        fm = pfm.PyCUDAFunctionManager(num_agents=num_agents, num_envs=num_envs, blocks_per_env=blocks_per_env)
        fm.loaded = loaded
        return fm

    return make


@needs_nvcc
def test_compile_inside_the_package_writes_nothing_and_loads_by_alias(cpu_pycuda_fm):
    from warp_drive.utils.common import get_project_root

    fm = cpu_pycuda_fm()
    main_file = f"{get_project_root()}/warp_drive/cuda_includes/test_build.cu"
    cubin_file = f"{get_project_root()}/warp_drive/cuda_bin/test_build.fatbin"
    binary = fm._compile(main_file=main_file, cubin_file=cubin_file, arch="sm_90")
    assert fm.compile is type(fm)._compile  # 2.7.1's property returning the static compile function
    assert binary.is_file() and not Path(cubin_file).exists() and not Path(cubin_file).parent.exists()
    fm.load_cuda_from_binary_file(cubin_file, default_functions_included=True)
    assert fm.loaded == [str(binary)]
    assert {"sample_actions", "reset_in_float_when_done_2d", "init_random", "free_random"} <= set(fm.cuda_function_names)
    fm.initialize_functions(["testkernel"])
    kernel = fm.get_function("testkernel")
    assert kernel.is_typed and kernel.codes == "PPPPfiii" and kernel.barrier_check is None  # one block per env
    with pytest.raises(ConfigError, match="already holds a module"):
        fm.load_cuda_from_binary_file(cubin_file)


@needs_nvcc
def test_compile_to_a_writable_path_copies_and_any_process_knows_the_source(cpu_pycuda_fm, tmp_path):
    fm = cpu_pycuda_fm()
    target = tmp_path / "bin" / "multi.fatbin"
    binary = fm._compile(main_file=INCLUDES / "test_build_multiblocks.cu", cubin_file=str(target), arch="sm_90")
    assert target.read_bytes() == binary.read_bytes()
    copy = tmp_path / "copy.cubin"  # a copy loaded without the alias: found by content
    copy.write_bytes(target.read_bytes())
    assert "testkernel" in main_files.binary_source(copy)
    fm.load_cuda_from_binary_file(copy)
    fm.initialize_functions(["testkernel"])
    kernel = fm.get_function("testkernel")
    assert kernel.barrier_check is not None  # the file states wkBlocksPerEnv = 2
    args = (_Holder(1), _Holder(2), _Holder(3), _Holder(4), 2.0, np.int32(100), np.int32(1), np.int32(2))
    kernel(*args, block=(3, 1, 1), grid=(4, 1))
    with pytest.raises(GeometryError, match="only part of an env's blocks"):
        kernel(*args, block=(3, 1, 1), grid=(3, 1))
    with pytest.raises(GeometryError, match="holds at most 264 blocks"):
        kernel(*args, block=(3, 1, 1), grid=(400, 1))


def test_missing_binary_and_foreign_binaries(cpu_pycuda_fm, tmp_path):
    fm = cpu_pycuda_fm()
    with pytest.raises(ConfigError, match="does not exist; build it first"):
        fm.load_cuda_from_binary_file(tmp_path / "nothing.fatbin")
    foreign = tmp_path / "foreign.cubin"
    foreign.write_bytes(b"built elsewhere")
    fm.load_cuda_from_binary_file(foreign)  # default functions are skipped with a warning
    assert fm.cuda_function_names == []
    fm.initialize_functions(["their_step"])
    assert not fm.get_function("their_step").is_typed
    with pytest.raises(ConfigError, match="may have another signature"):
        fm.initialize_functions(["sample_actions"])
    with pytest.raises(DataNotFoundError, match="not in the loaded module"):
        fm.initialize_functions(["not_there"])


@needs_nvcc
def test_kernel_without_c_linkage_gets_an_error_saying_to_add_it(cpu_pycuda_fm):
    fm = cpu_pycuda_fm()
    fm._arch = "sm_90"
    fm.load_cuda_from_source_code("__global__ void not_there(int* x) { x[0] = 1; }", default_functions_included=False)
    with pytest.raises(DataNotFoundError, match='without C linkage.*extern "C"'):
        fm.initialize_functions(["not_there"])


@needs_nvcc
def test_source_code_kernels_are_typed_and_barrier_kernels_checked_at_load(cpu_pycuda_fm, monkeypatch):
    from warp_drive.managers import pycuda_function_manager as pfm

    fm = cpu_pycuda_fm(num_agents=4, num_envs=300, blocks_per_env=2)
    fm.load_cuda_from_source_code(TUTORIAL_1A_SOURCE + 'extern "C" __global__ void sync(int* x) { __sync_env_threads(); }',
                                  default_functions_included=False)
    fm.initialize_functions(["cuda_increment"])
    assert fm.get_function("cuda_increment").codes == "Pi"
    with pytest.raises(GeometryError, match="num_envs <= 132"):  # 2 blocks per SM x 132 SMs / 2 blocks per env
        fm.initialize_functions(["sync"])
    monkeypatch.setattr(pfm.PyCUDAFunctionManager, "_estimate_blocks_per_sm", lambda self, f, t, s: 8)
    fm.initialize_functions(["sync"])


def test_build_helpers_of_2_7_1_explain_the_cache():
    from warp_drive.utils.pycuda_utils import misc

    for call in (lambda: misc.update_env_header("template_env_config.h", num_envs=2),
                 lambda: misc.check_env_header(),
                 lambda: misc.update_env_runner("template_env_runner.cu", env_name="TagContinuous")):
        with pytest.raises(ConfigError, match="content-addressed cache"):
            call()
    path = misc.get_default_env_directory("TagContinuous")
    assert path.endswith(".cu") and Path(path).is_file()
    assert misc.get_default_env_directory("MyEnv") is None
    assert not list((project_root() / "warp_drive" / "cuda_includes").glob("env_*"))


def test_resident_capacity_rounds_down():
    from warp_drive.compat271.cuda_helpers import DeviceArchitectures, resident_block_capacity

    assert resident_block_capacity(1000, 32, 2048, 132) == 2 * 132  # 2.7.1 rounded 2048/1000 up to 3
    assert resident_block_capacity(32, 16, 1536, 10) == 160
    assert DeviceArchitectures.MaxThreadsPerSM["sm_90"] == 2048


# --------------------------------------------------------------------------- nvcc builds
@needs_nvcc
@pytest.mark.parametrize("main", ["test_build.cu", "test_build_multiblocks.cu"])
def test_self_contained_test_builds_compile(main, tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    built = main_files.compile_main_file(INCLUDES / main, None, "sm_90")
    assert built.binary.is_file() and built.binary.parent == tmp_path
    signatures = parse_kernel_signatures(built.source)
    assert "testkernel" in signatures
    assert "wkBlocksPerEnv = " + ("1" if main == "test_build.cu" else "2") in built.source


@needs_nvcc
def test_main_file_cache_key_follows_its_includes(tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "src" / "sub").mkdir(parents=True)
    inc = tmp_path / "src" / "sub" / "k.cuh"
    inc.write_text('extern "C" __global__ void k(float* a) { a[0] = 1.0f; }\n')
    main = tmp_path / "src" / "main.cu"
    main.write_text("constexpr int wkNumberEnvs = 1;\nconstexpr int wkNumberAgents = 1;\nconstexpr int wkBlocksPerEnv = 1;\n"
                    '#include "core_service.cuh"\n#include "sub/k.cuh"\n')
    first = main_files.compile_main_file(main, None, "sm_90").binary
    assert main_files.compile_main_file(main, None, "sm_90").binary == first
    inc.write_text('extern "C" __global__ void k(float* a) { a[0] = 2.0f; }\n')
    assert main_files.compile_main_file(main, None, "sm_90").binary != first


@needs_nvcc
@pytest.mark.parametrize("bpe", [1, 3])
def test_2_7_1_kernel_helpers_compile(bpe, tmp_path, monkeypatch):
    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    code = """
    extern "C" __global__ void helpers(int* out) {
      const int env = getEnvID(blockIdx.x);
      const int agent = getAgentID(threadIdx.x, blockIdx.x, blockDim.x);
      const int index[3] = {1, 2, 3};
      const int dims[3] = {4, 5, 6};
      if (agent < wkNumberAgents) out[env * wkNumberAgents + agent] = get_flattened_array_index(index, dims, 3)
          + getRankInEnv(blockIdx.x) + wkMaxBlocks;
      __sync_env_threads();
    }
    """
    compiler.compile_cubin(compiler.render_source(4, 7, bpe, extra_code=code), "sm_90")


# --------------------------------------------------------------------------- managers
def test_data_manager_takes_2_7_1_positional_order():
    from warp_drive.managers.data_manager import CPUDataManager

    dm = CPUDataManager(3, 2, 1, 7)  # num_agents, num_envs, blocks_per_env, episode_length
    assert (dm.num_agents, dm.num_envs, dm.blocks_per_env, dm.episode_length) == (3, 2, 1, 7)
    dm.push_data_to_device({"num_agents": {"data": 3, "attributes": {"save_copy_and_apply_at_reset": False,
                                                                      "log_data_across_episode": False}}})
    dm.push_data_to_device({"multiplier": 2.0})
    assert type(dm.device_data("num_agents")) is np.int32 and dm.device_data("num_agents") == 3
    assert type(dm.device_data("multiplier")) is np.float32
    assert type(dm.meta_info("n_envs")) is np.int32


def test_function_manager_positional_order_and_meta_info_arguments():
    from warp_drive.managers.data_manager import CPUDataManager
    from warp_drive.managers.function_manager import CPUFunctionManager

    dm = CPUDataManager(num_agents=5, episode_length=10, num_envs=2)
    fm = CPUFunctionManager(dm.meta_info("n_agents"), dm.meta_info("n_envs"), 1, 0)
    assert fm.block == (5, 1, 1) and fm.grid == (2, 1)


def test_cpu_functions_take_the_pycuda_call_form():
    from warp_drive.managers.data_manager import CPUDataManager
    from warp_drive.managers.function_manager import CPUFunctionManager

    dm = CPUDataManager(num_agents=2, num_envs=2, episode_length=3)
    dm.push_data_to_device({"v": {"data": np.arange(8, dtype=np.float32).reshape(2, 2, 2), "attributes": {
        "save_copy_and_apply_at_reset": True, "log_data_across_episode": True}}})
    fm = CPUFunctionManager(num_agents=2, num_envs=2)
    fm.initialize_default_functions()
    log = fm.get_function("log_one_step_in_float")
    log(dm.device_data("v_for_log"), dm.device_data("v"), np.int32(2), np.int32(1), dm.meta_info("episode_length"),
        np.int32(1), block=fm.block, grid=fm.grid)
    np.testing.assert_array_equal(dm.pull_data_from_device("v_for_log")[1], [[4, 5], [6, 7]])
    dm.data_on_device_via_torch("v").fill_(-1)
    dm.data_on_device_via_torch("_done_")[:] = torch.tensor([0, 1], dtype=torch.int32)
    reset = fm.get_function("reset_in_float_when_done_3d")
    reset(dm.device_data("v"), dm.device_data("v_at_reset"), dm.device_data("_done_"), 2, 2, 0,
          block=fm.block, grid=fm.grid)
    np.testing.assert_array_equal(dm.pull_data_from_device("v"), [[[-1, -1], [-1, -1]], [[4, 5], [6, 7]]])
    fm.get_function("reset_in_float_when_done_2d")(dm.device_data("v"), dm.device_data("v_at_reset"),
                                                   dm.device_data("_done_"), 4, 1, block=fm.block, grid=fm.grid)
    np.testing.assert_array_equal(dm.pull_data_from_device("v").reshape(-1), np.arange(8))
    fm.get_function("init_random")(7, block=fm.block, grid=fm.grid)
    fm.get_function("free_random")(block=fm.block, grid=fm.grid)


def test_sampler_takes_2_7_1_action_shapes_and_keywords():
    from warp_drive.managers.data_manager import CPUDataManager
    from warp_drive.managers.function_manager import CPUFunctionManager
    from warp_drive.services.sampler import Sampler

    dm = CPUDataManager(num_agents=5, episode_length=10, num_envs=2)
    fm = CPUFunctionManager(num_agents=5, num_envs=2)
    fm.initialize_default_functions()
    sampler = Sampler(function_manager=fm)
    sampler.init_random(seed=None)
    dm.push_data_to_device({"a": [[[0], [0], [0], [0], [0]], [[0], [0], [0], [0], [0]]]}, torch_accessible=True)
    dm.push_data_to_device({"flat": np.zeros((2, 5), np.int32)}, torch_accessible=True)
    probs = torch.tensor([[0.0, 0.0, 1.0]]).repeat(2, 5, 1)
    for name in ("a", "flat"):
        sampler.register_actions(dm, action_name=name, num_actions=3)
        sampler.sample(dm, probs, action_name=name, use_argmax=False)
    assert (dm.pull_data_from_device("a") == 2).all() and (dm.pull_data_from_device("flat") == 2).all()
    sampler.assign(dm, np.ones((2, 5), np.int32), "flat")
    assert (dm.pull_data_from_device("flat") == 1).all()


# --------------------------------------------------------------------------- import paths
def test_2_7_1_import_paths_are_the_real_classes():
    from warp_drive.managers import data_manager, environment_reset, function_manager, log_controller, sampler
    from warp_drive.managers import pycuda_data_manager as real_dm
    from warp_drive.managers import pycuda_function_manager as real_fm
    from warp_drive.managers.pycuda_managers import pycuda_data_manager as compat_dm
    from warp_drive.managers.pycuda_managers import pycuda_function_manager as compat_fm

    assert compat_dm.PyCUDADataManager is real_dm.PyCUDADataManager
    assert compat_dm.CudaTensorHolder is real_dm.CudaTensorHolder
    assert compat_fm.PyCUDAFunctionManager is real_fm.PyCUDAFunctionManager
    assert compat_fm.PyCUDASampler is sampler.Sampler is function_manager.CUDASampler
    assert compat_fm.PyCUDAEnvironmentReset is environment_reset.EnvironmentReset is function_manager.CUDAEnvironmentReset
    assert compat_fm.PyCUDALogController is log_controller.LogController is function_manager.CUDALogController
    assert compat_fm.CUDAFunctionFeed is function_manager.FunctionFeed
    assert function_manager.CUDAFunctionManager is function_manager.FunctionManager
    assert data_manager.CUDADataManager is data_manager.DataManager
    assert issubclass(real_dm.PyCUDADataManager, compat_dm.CUDADataManager)
    with pytest.raises(AttributeError):
        function_manager.NoSuchName  # noqa: B018


def test_project_root_layout_of_the_tutorials():
    from warp_drive.utils.common import get_project_root

    root = get_project_root()
    assert (root / "warp_drive" / "__init__.py").is_file()
    assert (Path(f"{root}/warp_drive/cuda_includes") / "test_build.cu").is_file()
    assert (root / "example_envs" / "dummy_env" / "test_step.cu").is_file()


def test_autoinit_is_a_no_op_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible: importing the module attaches to it")
    from warp_drive.utils import autoinit_pycuda

    assert autoinit_pycuda.context is None and autoinit_pycuda.device is None


def test_cuda_tensor_holder_exposes_the_pointer():
    from warp_drive.managers.pycuda_data_manager import CudaTensorHolder
    from warp_drive.managers.pycuda_kernel import _raw_address

    t = torch.zeros(3)
    holder = CudaTensorHolder(t)
    assert holder.gpudata == t.data_ptr() == int(holder) == _raw_address(holder)


@needs_nvcc
def test_2_7_1_prebuilt_test_binaries_are_built_on_first_use(cpu_pycuda_fm):
    """2.7.1's own tests load cuda_bin/test_build*.fatbin without building them (it shipped one)."""
    from warp_drive.utils.common import get_project_root

    for stem in ("test_build", "test_build_multiblocks"):
        fm = cpu_pycuda_fm()
        fm.load_cuda_from_binary_file(f"{get_project_root()}/warp_drive/cuda_bin/{stem}.fatbin")
        fm.initialize_functions(["testkernel"])
        assert fm.get_function("testkernel").is_typed
    assert main_files.shipped_main_file(get_project_root() / "warp_drive" / "cuda_bin" / "other.fatbin") is None
    assert not (get_project_root() / "warp_drive" / "cuda_bin").exists()
