"""FunctionManager geometry, FunctionFeed binding and kernel signature checks (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from warp_drive.cuda.signature import parse_kernel_signatures
from warp_drive.errors import ConfigError, DataNotFoundError, GeometryError, KernelSignatureError
from warp_drive.managers.data_manager import CPUDataManager
from warp_drive.managers.function_manager import CPUFunctionManager, FunctionFeed

SRC = """
// comment with __global__ void Fake(int x)
extern "C" __global__ void Step(float* loc_x_arr, const int* __restrict__ actions, float scale,
                                int episode_length) {}
/* extern "C" __global__ void Hidden(float* a) {} */
extern "C" __global__ void NoArgs() {}
extern "C" __global__ void __launch_bounds__(wkThreadsPerBlock) BoundAfter(int* done_arr) {}
extern "C" __global__ __launch_bounds__(256, 2) void BoundBefore(float* rewards_arr) {}
"""


def test_geometry():
    fm = CPUFunctionManager(num_agents=2500, num_envs=4, blocks_per_env=3)
    assert fm.block == (834, 1, 1) and fm.grid == (12, 1)
    with pytest.raises(GeometryError, match="blocks_per_env=6 exceeds num_agents=5"):
        CPUFunctionManager(num_agents=5, num_envs=1, blocks_per_env=6)
    with pytest.raises(ConfigError):
        CPUFunctionManager(num_agents=0)


def test_parse_signatures_ignores_comments_and_reads_launch_bounds():
    sigs = parse_kernel_signatures(SRC)
    assert set(sigs) == {"Step", "NoArgs", "BoundAfter", "BoundBefore"}
    assert [p.name for p in sigs["BoundAfter"]] == ["done_arr"] and [p.name for p in sigs["BoundBefore"]] == ["rewards_arr"]
    assert [(p.ctype, p.name, p.is_pointer, p.code) for p in sigs["Step"]] == [
        ("float", "loc_x_arr", True, "P"), ("int", "actions", True, "P"), ("float", "scale", False, "f"),
        ("int", "episode_length", False, "i")]


@pytest.fixture()
def bound():
    dm = CPUDataManager(num_agents=2, num_envs=2, episode_length=3)
    dm.push_data_to_device({"loc_x": np.zeros((2, 2), np.float32), "actions": np.zeros((2, 2), np.int32),
                            "scale": 1.5, "count": 3})
    fm = CPUFunctionManager(num_agents=2, num_envs=2)
    fm._signatures.update(parse_kernel_signatures(SRC))
    return dm, fm


def test_feed_resolves_sources(bound):
    dm, _ = bound
    feed = FunctionFeed(dm)
    vals = feed(["loc_x", ("episode_length", "meta"), ("scale", "d")])
    assert vals[0] is dm.data_on_device_via_torch("loc_x") and vals[1] == 3 and vals[2] == np.float32(1.5)
    with pytest.raises(ConfigError, match="not understood"):
        feed([("loc_x", "bogus")])
    dm.push_data_to_device({"later": np.zeros(1, np.float32)})  # cache invalidated by new data
    assert feed(["later"])[0].shape == (1,)


def test_check_arguments_accepts_correct_binding(bound):
    dm, fm = bound
    fm.check_arguments("Step", ["loc_x", "actions", "scale", ("episode_length", "meta")], dm)


@pytest.mark.parametrize(
    "args,match",
    [
        (["loc_x", "actions", "scale"], "expects 4 args, got 3; missing: \\['episode_length'\\]"),
        (["actions", "loc_x", "scale", ("episode_length", "meta")], "argument order"),
        (["loc_x", "loc_x", "scale", ("episode_length", "meta")], "expects int data, got torch.float32"),
        (["loc_x", "actions", "count", ("episode_length", "meta")], "expects float, got int32"),
        (["loc_x", "actions", "loc_x", ("episode_length", "meta")], "expects a scalar"),
        (["scale", "actions", "scale", ("episode_length", "meta")], "expects an array"),
    ],
)
def test_check_arguments_rejects(bound, args, match):
    dm, fm = bound
    with pytest.raises(KernelSignatureError, match=match):
        fm.check_arguments("Step", args, dm)


def test_unknown_function_names_the_fix():
    fm = CPUFunctionManager()
    with pytest.raises(DataNotFoundError, match="initialize_functions"):
        fm.get_function("sample_actions")
    fm.initialize_default_functions()
    assert "sample_actions" in fm.function_names


class _FakeFunction:
    """Stands in for a pycuda Function: records how a launch arrives."""

    def __init__(self, with_fast_launch: bool) -> None:
        self.calls: list[tuple] = []
        self.texrefs: list = []
        if with_fast_launch:
            self._launch_kernel = lambda *a: self.calls.append(("fast", *a))

    def prepare(self, codes: str) -> None:
        self.arg_format = codes

    def prepared_async_call(self, grid, block, stream, *values, shared_size=0) -> None:
        self.calls.append(("prepared", grid, block, stream, values, shared_size))


@pytest.mark.parametrize("fast", [True, False])
def test_kernel_launch_packs_pointers_and_passes_shared_memory(fast, monkeypatch):
    """Tensors become pointers; the prepared format packs the values for pycuda's stateless launch
    (or prepared_async_call without it); the declared dynamic shared memory goes with every launch."""
    import struct
    import sys
    import types

    from warp_drive.managers.pycuda_function_manager import _Kernel

    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda._pvt_struct", types.SimpleNamespace(pack=struct.pack))
    function = _FakeFunction(with_fast_launch=fast)
    kernel = _Kernel("K", function, "Pif", shared_bytes=4096)
    buffer = torch.zeros(3)
    kernel.launch((2, 1), (32, 1, 1), None, [buffer, 7, 1.5])
    if fast:
        assert function.calls == [("fast", (2, 1), (32, 1, 1), struct.pack("Pif", buffer.data_ptr(), 7, 1.5), 4096, None)]
    else:
        assert function.calls == [("prepared", (2, 1), (32, 1, 1), None, (buffer.data_ptr(), 7, 1.5), 4096)]
