"""WarpDrive 2.7.1's tutorial code paths (1.a basics, 2.a sampler, 3 reset and log), written as a
2.7.1 user writes them, plus the 2.7.1 kernel-side helpers (env barrier across blocks) on the GPU.

The tutorial bodies follow the notebooks' cells: same imports, calls and asserts.
"""

from __future__ import annotations

import subprocess
from timeit import Timer

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

INCREMENT_SOURCE = """
// Each index corresponding to (env_id, agent_id) in the array is incremented by "agent_id + env_id".
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
            int increment = env_id + agent_id;
            data[array_index] += increment;
        }
    }
}
"""


# --------------------------------------------------------------------------- tutorial 1.a
def test_tutorial_1a_basics():
    from warp_drive.managers.pycuda_managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import PyCUDAFunctionManager
    from warp_drive.utils.data_feed import DataFeed

    num_agents, num_envs, episode_length = 3, 2, 5
    cuda_data_manager = PyCUDADataManager(num_agents, num_envs, episode_length=episode_length)
    random_data = np.random.rand(num_envs, num_agents)
    data_feed = DataFeed()
    data_feed.add_data(name="random_data", data=random_data, save_copy_and_apply_at_reset=False,
                       log_data_across_episode=False)
    cuda_data_manager.push_data_to_device(data_feed)
    np.testing.assert_allclose(cuda_data_manager.pull_data_from_device("random_data"), random_data, rtol=1e-6)
    tensor_feed = DataFeed()
    tensor_feed.add_data(name="random_tensor", data=random_data)
    cuda_data_manager.push_data_to_device(tensor_feed, torch_accessible=True)
    assert cuda_data_manager.data_on_device_via_torch("random_tensor").is_cuda

    cuda_function_manager = PyCUDAFunctionManager(
        num_agents=cuda_data_manager.meta_info("n_agents"),
        num_envs=cuda_data_manager.meta_info("n_envs"),
    )
    cuda_function_manager.load_cuda_from_source_code(INCREMENT_SOURCE, default_functions_included=False)
    cuda_function_manager.initialize_functions(["cuda_increment"])
    increment_function = cuda_function_manager.get_function("cuda_increment")
    cuda_data_manager.push_data_to_device(
        {"num_agents": {"data": num_agents,
                        "attributes": {"save_copy_and_apply_at_reset": False, "log_data_across_episode": False}}}
    )
    increment = np.arange(num_envs)[:, None] + np.arange(num_agents)[None, :]
    for times in (1, 2):
        increment_function(
            cuda_data_manager.device_data("random_data"),
            cuda_data_manager.device_data("num_agents"),
            block=cuda_function_manager.block,
            grid=cuda_function_manager.grid,
        )
        np.testing.assert_allclose(cuda_data_manager.pull_data_from_device("random_data") - random_data,
                                   times * increment, atol=1e-5)


def push_random_data_and_increment_timer(num_runs=1, num_envs=2, num_agents=3, source_code=None, episode_length=100):
    """Tutorial 1.a's timing helper, as written there."""
    from warp_drive.managers.pycuda_managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import PyCUDAFunctionManager
    from warp_drive.utils.data_feed import DataFeed

    cuda_data_manager = PyCUDADataManager(num_agents=num_agents, num_envs=num_envs, episode_length=episode_length)
    cuda_function_manager = PyCUDAFunctionManager(
        num_agents=cuda_data_manager.meta_info("n_agents"),
        num_envs=cuda_data_manager.meta_info("n_envs"),
    )
    cuda_function_manager.load_cuda_from_source_code(source_code, default_functions_included=False)
    cuda_function_manager.initialize_functions(["cuda_increment"])
    increment_function = cuda_function_manager.get_function("cuda_increment")

    def push_random_data(num_agents, num_envs):
        random_data = np.random.rand(num_envs, num_agents)
        data_feed = DataFeed()
        data_feed.add_data(name="random_data", data=random_data)
        data_feed.add_data(name="num_agents", data=num_agents)
        cuda_data_manager.push_data_to_device(data_feed)

    def increment_data():
        increment_function(
            cuda_data_manager.device_data("random_data"),
            cuda_data_manager.device_data("num_agents"),
            block=cuda_function_manager.block,
            grid=cuda_function_manager.grid,
        )

    data_push_time = Timer(lambda: push_random_data(num_agents, num_envs)).timeit(number=1)
    program_run_time = Timer(lambda: increment_data()).timeit(number=num_runs)
    return {"data push times": data_push_time, "code run time": program_run_time}


def test_tutorial_1a_timing_scenarios():
    for num_envs, num_agents in [(1, 1), (10, 10), (1, 1000), (1000, 1000)]:
        times = push_random_data_and_increment_timer(100, num_envs, num_agents, INCREMENT_SOURCE)
        assert times["code run time"] > 0


# --------------------------------------------------------------------------- tutorial 2.a
def test_tutorial_2a_sampler():
    from warp_drive.managers.pycuda_managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import PyCUDAFunctionManager, PyCUDASampler
    from warp_drive.utils.common import get_project_root
    from warp_drive.utils.constants import Constants
    from warp_drive.utils.data_feed import DataFeed

    _MAIN_FILEPATH = f"{get_project_root()}/warp_drive/cuda_includes"
    _CUBIN_FILEPATH = f"{get_project_root()}/warp_drive/cuda_bin"
    _ACTIONS = Constants.ACTIONS

    cuda_data_manager = PyCUDADataManager(num_agents=5, episode_length=10, num_envs=2)
    cuda_function_manager = PyCUDAFunctionManager(
        num_agents=cuda_data_manager.meta_info("n_agents"),
        num_envs=cuda_data_manager.meta_info("n_envs"),
    )
    main_example_file = f"{_MAIN_FILEPATH}/test_build.cu"
    bin_example_file = f"{_CUBIN_FILEPATH}/test_build.fatbin"
    cuda_function_manager._compile(main_file=main_example_file, cubin_file=bin_example_file)
    cuda_function_manager.load_cuda_from_binary_file(bin_example_file, default_functions_included=True)
    cuda_sampler = PyCUDASampler(function_manager=cuda_function_manager)
    cuda_sampler.init_random(seed=None)

    data_feed = DataFeed()
    data_feed.add_data(name=f"{_ACTIONS}_a", data=[[[0], [0], [0], [0], [0]], [[0], [0], [0], [0], [0]]])
    cuda_data_manager.push_data_to_device(data_feed, torch_accessible=True)
    assert cuda_data_manager.is_data_on_device_via_torch(f"{_ACTIONS}_a")
    cuda_sampler.register_actions(cuda_data_manager, action_name=f"{_ACTIONS}_a", num_actions=3)
    distribution = np.array([
        [[0.333, 0.333, 0.333], [0.2, 0.5, 0.3], [0.95, 0.02, 0.03], [0.02, 0.95, 0.03], [0.02, 0.03, 0.95]],
        [[0.1, 0.7, 0.2], [0.7, 0.2, 0.1], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]],
    ])
    distribution = torch.from_numpy(distribution).float().cuda()
    actions_batch = torch.from_numpy(np.empty((10000, 2, 5), dtype=np.int32)).cuda()
    for i in range(10000):
        cuda_sampler.sample(cuda_data_manager, distribution, action_name=f"{_ACTIONS}_a")
        actions_batch[i] = cuda_data_manager.data_on_device_via_torch(f"{_ACTIONS}_a")[:, :, 0]
    actions_batch_host = actions_batch.cpu().numpy()
    probs = distribution.cpu().numpy()
    for env in range(2):
        for agent in range(5):
            freq = np.bincount(actions_batch_host[:, env, agent], minlength=3) / 10000.0
            np.testing.assert_allclose(freq, probs[env, agent] / probs[env, agent].sum(), atol=0.03)
            assert freq[probs[env, agent] == 0].sum() == 0  # zero-probability actions never drawn

    data_feed = DataFeed()
    data_feed.add_data(name=f"{_ACTIONS}_b", data=[[[0], [0], [0], [0], [0]], [[0], [0], [0], [0], [0]]])
    cuda_data_manager.push_data_to_device(data_feed, torch_accessible=True)
    cuda_sampler.register_actions(cuda_data_manager, action_name=f"{_ACTIONS}_b", num_actions=4)
    distribution = torch.full((2, 5, 4), 0.25).cuda()
    actions_batch = torch.from_numpy(np.empty((10000, 2, 5), dtype=np.int32)).cuda()
    for i in range(10000):
        cuda_sampler.sample(cuda_data_manager, distribution, action_name=f"{_ACTIONS}_b")
        actions_batch[i] = cuda_data_manager.data_on_device_via_torch(f"{_ACTIONS}_b")[:, :, 0]
    host = actions_batch.cpu().numpy()
    np.testing.assert_allclose(np.bincount(host.reshape(-1), minlength=4) / host.size, 0.25, atol=0.01)
    # agents draw independently: the spread across agents matches independent uniform draws
    assert abs(host.std(axis=2).mean() - np.random.default_rng(0).integers(0, 4, (10000, 2, 5)).std(axis=2).mean()) < 0.02


# --------------------------------------------------------------------------- tutorial 3
def _tutorial_3(main_file_name: str):
    from warp_drive.managers.pycuda_managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import (
        PyCUDAEnvironmentReset,
        PyCUDAFunctionManager,
        PyCUDALogController,
    )
    from warp_drive.utils.common import get_project_root
    from warp_drive.utils.constants import Constants
    from warp_drive.utils.data_feed import DataFeed

    _MAIN_FILEPATH = f"{get_project_root()}/warp_drive/cuda_includes"
    _CUBIN_FILEPATH = f"{get_project_root()}/warp_drive/cuda_bin"
    _ACTIONS = Constants.ACTIONS
    blocks_per_env = 2 if "multiblocks" in main_file_name else 1

    cuda_data_manager = PyCUDADataManager(num_agents=5, num_envs=2, episode_length=2, blocks_per_env=blocks_per_env)
    cuda_function_manager = PyCUDAFunctionManager(
        num_agents=cuda_data_manager.meta_info("n_agents"),
        num_envs=cuda_data_manager.meta_info("n_envs"),
        blocks_per_env=blocks_per_env,
    )
    main_example_file = f"{_MAIN_FILEPATH}/{main_file_name}.cu"
    bin_example_file = f"{_CUBIN_FILEPATH}/{main_file_name}.fatbin"
    cuda_function_manager._compile(main_file=main_example_file, cubin_file=bin_example_file)
    cuda_function_manager.load_cuda_from_binary_file(bin_example_file)
    cuda_env_resetter = PyCUDAEnvironmentReset(function_manager=cuda_function_manager)
    cuda_env_logger = PyCUDALogController(function_manager=cuda_function_manager)
    cuda_function_manager.initialize_functions(["testkernel"])

    def cuda_dummy_step(function_manager, data_manager, env_resetter, target: int, step: int):
        env_resetter.reset_when_done(data_manager)
        step = np.int32(step)
        target = np.int32(target)
        test_step = function_manager.get_function("testkernel")
        test_step(
            data_manager.device_data("X"),
            data_manager.device_data("Y"),
            data_manager.device_data("_done_"),
            data_manager.device_data(f"{_ACTIONS}"),
            data_manager.device_data("multiplier"),
            target,
            step,
            data_manager.meta_info("episode_length"),
            block=function_manager.block,
            grid=function_manager.grid,
        )

    data = DataFeed()
    data.add_data(name="X", data=[[0.1, 0.2, 0.3, 0.4, 0.5], [0.6, 0.7, 0.8, 0.9, 1.0]],
                  save_copy_and_apply_at_reset=True, log_data_across_episode=True)
    data.add_data(name="Y", data=np.array([[6, 7, 8, 9, 10], [1, 2, 3, 4, 5]]),
                  save_copy_and_apply_at_reset=True, log_data_across_episode=True)
    data.add_data(name="multiplier", data=2.0)
    tensor = DataFeed()
    tensor.add_data(name=f"{_ACTIONS}", data=[[[0, 0, 0]] * 5, [[0, 0, 0]] * 5])
    cuda_data_manager.push_data_to_device(data)
    cuda_data_manager.push_data_to_device(tensor, torch_accessible=True)
    assert cuda_data_manager.is_data_on_device("X")
    assert cuda_data_manager.is_data_on_device("Y")
    assert cuda_data_manager.is_data_on_device_via_torch(f"{_ACTIONS}")

    cuda_env_logger.reset_log(data_manager=cuda_data_manager, env_id=0)
    for t in range(1, cuda_data_manager.meta_info("episode_length") + 1):
        cuda_dummy_step(function_manager=cuda_function_manager, data_manager=cuda_data_manager,
                        env_resetter=cuda_env_resetter, target=100, step=t)
        cuda_env_logger.update_log(data_manager=cuda_data_manager, step=t)
    dense_log = cuda_env_logger.fetch_log(data_manager=cuda_data_manager, names=["X", "Y"])
    X_update = dense_log["X_for_log"]
    Y_update = dense_log["Y_for_log"]
    assert abs(X_update[1].mean() - 0.15) < 1e-5
    assert abs(X_update[2].mean() - 0.075) < 1e-5
    assert Y_update[1].mean() == 16
    assert Y_update[2].mean() == 32
    assert (cuda_data_manager.pull_data_from_device("_done_") == 1).all()
    actions = cuda_data_manager.pull_data_from_device(f"{_ACTIONS}")
    assert (actions == np.arange(3)).all()

    cuda_env_resetter.reset_when_done(data_manager=cuda_data_manager)
    done = cuda_data_manager.pull_data_from_device("_done_")
    assert done[0] == 0
    assert done[1] == 0
    X_after_reset = cuda_data_manager.pull_data_from_device("X")
    Y_after_reset = cuda_data_manager.pull_data_from_device("Y")
    assert abs(X_after_reset[0].mean() - 0.3) < 1e-5
    assert abs(X_after_reset[1].mean() - 0.8) < 1e-5
    assert Y_after_reset[0].mean() == 8
    assert Y_after_reset[1].mean() == 3
    return cuda_data_manager, cuda_function_manager


def test_tutorial_3_reset_and_log():
    _tutorial_3("test_build")


def test_tutorial_3_with_two_blocks_per_env():
    _tutorial_3("test_build_multiblocks")


def test_target_reached_marks_done_and_cuda_function_feed_binds_arguments():
    """The 2.7.1 env-class launch form: ``kernel(*feed([...names...]), block=..., grid=...)``."""
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import CUDAFunctionFeed
    from warp_drive.utils.constants import Constants

    dm, fm = _tutorial_3("test_build")
    dm.push_data_to_device({"target": 7, "step": 1})
    feed = CUDAFunctionFeed(dm)
    step = fm.get_function("testkernel")
    step(*feed(["X", "Y", "_done_", Constants.ACTIONS, "multiplier", "target", "step", ("episode_length", "meta")]),
         block=fm.block, grid=fm.grid)
    # env 0's Y doubles to 12..20 >= 7 (done), env 1's to 2..10: agent 3, 4 reach 8 and 10 >= 7 (done)
    assert dm.pull_data_from_device("_done_").tolist() == [1, 1]
    dm.data_on_device_via_torch("_done_").zero_()
    dm.push_data_to_device({"high_target": 1000})
    step(*feed(["X", "Y", "_done_", Constants.ACTIONS, "multiplier", "high_target", "step", ("episode_length", "meta")]),
         block=fm.block, grid=fm.grid)
    assert dm.pull_data_from_device("_done_").tolist() == [0, 0]


def test_2_7_1_unit_tests_load_the_prebuilt_test_binary_without_building_it():
    """2.7.1's own tests load cuda_bin/test_build.fatbin directly (it shipped one); here it is
    built from the shipped source on first use, in the cache."""
    from warp_drive.managers.pycuda_managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import PyCUDAFunctionManager
    from warp_drive.utils.common import get_project_root

    dm = PyCUDADataManager(num_agents=5, num_envs=2, episode_length=2)
    fm = PyCUDAFunctionManager(num_agents=5, num_envs=2)
    fm.load_cuda_from_binary_file(f"{get_project_root()}/warp_drive/cuda_bin/test_build.fatbin")
    fm.initialize_functions(["testkernel"])
    dm.push_data_to_device({"x": np.ones((2, 5), np.float32), "y": np.ones((2, 5), np.int32),
                            "a": np.zeros((2, 5, 3), np.int32)}, torch_accessible=True)
    fm.get_function("testkernel")(dm.device_data("x"), dm.device_data("y"), dm.device_data("_done_"),
                                  dm.device_data("a"), np.float32(4.0), np.int32(3), np.int32(2),
                                  dm.meta_info("episode_length"), block=fm.block, grid=fm.grid)
    np.testing.assert_allclose(dm.pull_data_from_device("x"), 0.25)
    assert (dm.pull_data_from_device("y") == 4).all() and (dm.pull_data_from_device("_done_") == 1).all()


# --------------------------------------------------------------------------- 2.7.1 kernel-side helpers
EXCHANGE_SOURCE = """
// Each round every agent publishes a value, waits for the whole env, then reads its mirror
// agent's value (held by another block when the env spans several blocks).
extern "C" __global__ void exchange(int* buf, int* out, int rounds) {
  const int env = getEnvID(blockIdx.x);
  const int agent = getAgentID(threadIdx.x, blockIdx.x, blockDim.x);
  const bool active = env < wkNumberEnvs && agent < wkNumberAgents;
  const int row = env * wkNumberAgents;
  int sum = 0;
  for (int r = 0; r < rounds; ++r) {
    if (active) buf[row + agent] = r * 100000 + agent * 10 + getRankInEnv(blockIdx.x);
    __sync_env_threads();
    if (active) sum += buf[row + (wkNumberAgents - 1 - agent)];
    __sync_env_threads();
  }
  if (active) out[row + agent] = sum;
}

extern "C" __global__ void flat_index(int* out) {
  const int index[3] = {1, 2, 3};
  const int dims[3] = {4, 5, 6};
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = get_flattened_array_index(index, dims, 3);
}
"""


@pytest.mark.parametrize("num_agents, num_envs, blocks_per_env", [(5, 2, 2), (2048, 60, 2), (3000, 20, 3)])
def test_env_barrier_orders_writes_across_blocks(num_agents, num_envs, blocks_per_env):
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    dm = PyCUDADataManager(num_agents, num_envs, blocks_per_env, 1)
    fm = PyCUDAFunctionManager(num_agents, num_envs, blocks_per_env)
    fm.load_cuda_from_source_code(EXCHANGE_SOURCE, default_functions_included=False)
    fm.initialize_functions(["exchange", "flat_index"])
    dm.push_data_to_device({"buf": np.zeros((num_envs, num_agents), np.int32),
                            "out": np.zeros((num_envs, num_agents), np.int32)}, torch_accessible=True)
    rounds = 50
    fm.get_function("exchange")(dm.device_data("buf"), dm.device_data("out"), np.int32(rounds),
                                block=fm.block, grid=fm.grid)
    mirror = num_agents - 1 - np.arange(num_agents)
    threads = fm.block[0]
    expected = sum(r * 100000 for r in range(rounds)) + rounds * (mirror * 10 + mirror // threads)
    out = dm.pull_data_from_device("out")
    np.testing.assert_array_equal(out, np.broadcast_to(expected, out.shape))
    fm.get_function("flat_index")(dm.device_data("out"), block=(1, 1, 1), grid=(1, 1))
    assert dm.pull_data_from_device("out")[0, 0] == (1 * 5 + 2) * 6 + 3


def test_env_barrier_refuses_grids_that_are_not_co_resident():
    from warp_drive.errors import GeometryError
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager, _occupancy_blocks_per_sm

    fm = PyCUDAFunctionManager(num_agents=2048, num_envs=2, blocks_per_env=2)
    fm.load_cuda_from_source_code(EXCHANGE_SOURCE, default_functions_included=False)
    fm.initialize_functions(["exchange"])
    kernel = fm.get_function("exchange")
    per_sm = _occupancy_blocks_per_sm(fm._binary, "exchange", 1024, 0)
    assert per_sm is not None and per_sm >= 1  # the driver's occupancy calculator is reachable
    assert per_sm == fm._estimate_blocks_per_sm(kernel.function, 1024, 0)  # and the fallback agrees here
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    buf = torch.zeros(10, dtype=torch.int32, device="cuda")
    too_many = (per_sm * sms // 2 + 1) * 2
    with pytest.raises(GeometryError, match="resident on the GPU at once"):
        kernel(buf, buf, np.int32(1), block=(1024, 1, 1), grid=(too_many, 1))
    with pytest.raises(GeometryError, match="only part of an env's blocks"):
        kernel(buf, buf, np.int32(1), block=(1024, 1, 1), grid=(3, 1))
    big = PyCUDAFunctionManager(num_agents=2048, num_envs=too_many, blocks_per_env=2)
    big.load_cuda_from_source_code(EXCHANGE_SOURCE, default_functions_included=False)
    with pytest.raises(GeometryError, match=f"num_envs <= {per_sm * sms // 2}"):
        big.initialize_functions(["exchange"])  # refused at load, before anything can hang


def test_2_7_1_reset_and_log_kernels_match_their_numpy_twins():
    from warp_drive.compat271 import cpu_kernels as ck
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    E, N, F, T, bpe = 3, 7, 4, 5, 2
    dm = PyCUDADataManager(N, E, bpe, T)
    fm = PyCUDAFunctionManager(N, E, bpe)
    fm.load_cuda_from_source_code("", compat_271=True)  # 2.7.1's kernels are compiled in when asked for
    rng = np.random.default_rng(1)
    state = rng.normal(size=(E, N, F)).astype(np.float32)
    istate = rng.integers(0, 100, size=(E, N)).astype(np.int32)
    dm.push_data_to_device({"s": {"data": state, "attributes": {"save_copy_and_apply_at_reset": True,
                                                                 "log_data_across_episode": True}},
                            "i": {"data": istate, "attributes": {"save_copy_and_apply_at_reset": True,
                                                                  "log_data_across_episode": True}}})
    s, i = dm.data_on_device_via_torch("s"), dm.data_on_device_via_torch("i")
    s.mul_(-1)
    i.add_(1000)
    dm.data_on_device_via_torch("_done_").copy_(torch.tensor([1, 0, 1], dtype=torch.int32))
    host_s, host_i = s.cpu().numpy().copy(), i.cpu().numpy().copy()
    done = np.array([1, 0, 1], np.int32)
    fm.get_function("reset_in_float_when_done_3d")(dm.device_data("s"), dm.device_data("s_at_reset"),
                                                   dm.device_data("_done_"), np.int32(N), np.int32(F), np.int32(0),
                                                   block=((N - 1) // bpe + 1, 1, 1), grid=fm.grid)
    fm.get_function("reset_in_int_when_done_2d")(dm.device_data("i"), dm.device_data("i_at_reset"),
                                                 dm.device_data("_done_"), np.int32(N), np.int32(0),
                                                 block=((N - 1) // bpe + 1, 1, 1), grid=fm.grid)
    ck.reset_in_float_when_done_3d(host_s, state, done, N, F, 0)
    ck.reset_in_int_when_done_2d(host_i, istate, done, N, 0)
    np.testing.assert_array_equal(dm.pull_data_from_device("s"), host_s)
    np.testing.assert_array_equal(dm.pull_data_from_device("i"), host_i)
    log_s = np.zeros((T + 1, N, F), np.float32)
    fm.get_function("log_one_step_in_float")(dm.device_data("s_for_log"), dm.device_data("s"), np.int32(F),
                                             np.int32(3), dm.meta_info("episode_length"), np.int32(2),
                                             block=fm.block, grid=(bpe, 1))
    ck.log_one_step_in_float(log_s, host_s, F, 3, T, 2)
    np.testing.assert_array_equal(dm.pull_data_from_device("s_for_log"), log_s)
    fm.get_function("init_random")(np.int32(5), block=fm.block, grid=fm.grid)
    fm.get_function("free_random")(block=fm.block, grid=fm.grid)
    torch.cuda.synchronize()


def test_2_7_1_kernels_are_only_in_modules_that_ask_for_them():
    """compat_271.cuh is compiled in only when the code names a 2.7.1 symbol or the build asks:
    a plain module does not hold 2.7.1's kernels, and launching one is a typed error naming the fix."""
    import pycuda.driver as cuda

    from warp_drive.errors import KernelNotBuiltError
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    plain = PyCUDAFunctionManager(num_agents=5, num_envs=2)
    plain.load_cuda_from_source_code(INCREMENT_SOURCE)
    assert not plain.has_compat_271_kernels() and plain.is_initialized("sample_actions")
    with pytest.raises(cuda.LogicError):
        plain._module.get_function("reset_in_float_when_done_2d")  # not in the binary at all
    with pytest.raises(KernelNotBuiltError, match="compat_271=True"):
        plain.get_function("reset_in_float_when_done_2d")
    named = PyCUDAFunctionManager(num_agents=5, num_envs=2)
    named.load_cuda_from_source_code(EXCHANGE_SOURCE)  # names getEnvID, __sync_env_threads: the header comes
    assert named.has_compat_271_kernels() and named.is_initialized("reset_in_float_when_done_2d")


def test_binary_built_elsewhere_runs_through_the_untyped_call(tmp_path):
    from warp_drive.managers.pycuda_data_manager import CudaTensorHolder
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    src = tmp_path / "foreign.cu"
    src.write_text('extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {'
                   " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }")
    major, minor = torch.cuda.get_device_capability()
    binary = tmp_path / "foreign.fatbin"
    subprocess.run(["nvcc", "--fatbin", f"-arch=sm_{major}{minor}", str(src), "-o", str(binary)], check=True)
    fm = PyCUDAFunctionManager(num_agents=4, num_envs=1)
    fm.load_cuda_from_binary_file(str(binary), default_functions_included=True)
    fm.initialize_functions(["axpy"])
    axpy = fm.get_function("axpy")
    assert not axpy.is_typed
    y = torch.ones(10, device="cuda")
    x = torch.arange(10, dtype=torch.float32, device="cuda")
    axpy(y, CudaTensorHolder(x), np.float32(2.0), np.int32(10), block=(32, 1, 1), grid=(1, 1))
    axpy(y, x, 1.0, 10, block=(32, 1, 1), grid=(1, 1))  # Python numbers become float32 / int32
    torch.testing.assert_close(y, 1 + 3 * x)


def test_pycuda_style_call_overhead_is_close_to_the_internal_launch():
    """The typed call converts arguments in Python; it must stay within a few microseconds."""
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    dm = PyCUDADataManager(num_agents=5, num_envs=2, episode_length=2)
    fm = PyCUDAFunctionManager(num_agents=5, num_envs=2)
    fm.load_cuda_from_source_code(INCREMENT_SOURCE, default_functions_included=False)
    fm.initialize_functions(["cuda_increment"])
    dm.push_data_to_device({"d": np.zeros((2, 5), np.float32), "n": 5})
    f = fm.get_function("cuda_increment")
    args = [dm.device_data("d"), dm.device_data("n")]
    reps = 5000
    for _ in range(100):
        f(*args, block=fm.block, grid=fm.grid)
    torch.cuda.synchronize()
    call = min(Timer(lambda: f(*args, block=fm.block, grid=fm.grid)).repeat(3, reps)) / reps
    launch = min(Timer(lambda: fm.launch("cuda_increment", args)).repeat(3, reps)) / reps
    torch.cuda.synchronize()
    print(f"pycuda-style call {call * 1e6:.2f} us, internal launch {launch * 1e6:.2f} us")
    assert call < launch + 5e-6
