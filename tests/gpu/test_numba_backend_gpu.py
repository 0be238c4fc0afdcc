"""The Numba backend on a GPU: compiled by numba-cuda, sharing the store's device memory, on torch's stream.

Run on the GPU machine (numba-cuda and pycuda installed): ``python -m pytest -q -m gpu
tests/gpu/test_numba_backend_gpu.py -s`` (``-s`` shows the CUDA-graph timing). The CPU half, through
Numba's simulator, is ``tests/cpu/test_numba_backend.py``.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    pytest.skip("NUMBA_ENABLE_CUDASIM=1: these tests need the real numba.cuda", allow_module_level=True)
cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install -e '.[numba]')")


@pytest.fixture(scope="module")
def scale_kernel():
    @cuda.jit
    def scale(x, s):
        e, a = cuda.blockIdx.x, cuda.threadIdx.x
        if a < x.shape[1]:
            x[e, a] = x[e, a] * s
    return scale


def _wrappers(num_envs: int, **config):
    from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
    from warp_drive.env.env_wrapper import EnvWrapper

    return {b: EnvWrapper(ClassicControlCartPoleEnv(**config), num_envs=num_envs, env_backend=b)
            for b in ("numba", "pycuda")}


def test_store_memory_is_shared_and_launches_follow_torchs_stream(scale_kernel):
    from warp_drive.vocab.data_feed import DataFeed
    from warp_drive.managers.numba_data_manager import NumbaDataManager
    from warp_drive.numba_backend.runtime import NumbaKernel

    dm = NumbaDataManager(num_agents=64, num_envs=128, episode_length=3)
    feed = DataFeed()
    feed.add_data("x", np.ones((128, 64), np.float32))
    dm.push_data_to_device(feed, torch_accessible=True)
    x = dm.data_on_device_via_torch("x")
    assert dm.numba_array("x").__cuda_array_interface__["data"][0] == x.data_ptr()
    kernel = NumbaKernel("scale", scale_kernel, simulated_run=False)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # queued behind torch's own work on the same stream, no host sync between
        for _ in range(50):
            x.add_(1.0)
            kernel[128, 64](x, np.float32(0.5))
    torch.cuda.current_stream().wait_stream(side)
    expected = 1.0
    for _ in range(50):
        expected = (expected + 1.0) * 0.5
    torch.testing.assert_close(x, torch.full_like(x, expected))


def test_cartpole_numba_step_equals_the_cuda_c_step():
    w = _wrappers(256, episode_length=200, seed=11)
    for wrapper in w.values():
        wrapper.reset_all_envs()
    rng = np.random.default_rng(1)
    for t in range(300):
        actions = rng.integers(0, 2, size=(256, 1, 1)).astype(np.int32)
        for wrapper in w.values():
            wrapper.step_all_envs(actions)
        for name in ("state", "observations", "rewards", "_done_", "_truncated_", "_timestep_"):
            a, b = (w[k].cuda_data_manager.pull_data_from_device(name) for k in ("numba", "pycuda"))
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6, err_msg=f"step {t}: {name}")
        for wrapper in w.values():
            wrapper.reset_only_done_envs()


#: env -> (constructor kwargs, action draw (rng, E) -> actions, arrays compared beside the episode flags).
#: Tag continuous, ContinuousMountainCar and Pendulum round every float op once on both sides: equal bits.
NUMBA_VS_CUDA_C = {
    "example_envs.classic_control.acrobot.acrobot:ClassicControlAcrobotEnv":
        ({"episode_length": 50, "seed": 2}, lambda rng, e: rng.integers(0, 3, (e, 1, 1)).astype(np.int32), ("state",)),
    "example_envs.classic_control.mountain_car.mountain_car:ClassicControlMountainCarEnv":
        ({"episode_length": 50, "seed": 3}, lambda rng, e: rng.integers(0, 3, (e, 1, 1)).astype(np.int32), ("state",)),
    "example_envs.classic_control.continuous_mountain_car.continuous_mountain_car:ClassicControlContinuousMountainCarEnv":
        ({"episode_length": 50, "seed": 4}, lambda rng, e: rng.uniform(-1.3, 1.3, (e, 1, 1)).astype(np.float32),
         ("state",)),
    "example_envs.classic_control.pendulum.pendulum:ClassicControlPendulumEnv":
        ({"episode_length": 50, "seed": 5}, lambda rng, e: rng.uniform(-2.5, 2.5, (e, 1, 1)).astype(np.float32),
         ("state",)),
    "example_envs.tag_gridworld.tag_gridworld:TagGridWorld":
        ({"num_taggers": 5, "grid_length": 6, "episode_length": 30, "seed": 6},
         lambda rng, e: rng.integers(0, 5, (e, 6, 1)).astype(np.int32), ("loc_x", "loc_y", "num_taggers_on_runner")),
    "example_envs.tag_continuous.tag_continuous:TagContinuous":
        ({"num_taggers": 4, "num_runners": 40, "grid_length": 5.0, "episode_length": 30, "seed": 7,
          "tagging_distance": 0.05, "use_full_observation": False, "num_other_agents_observed": 5},
         lambda rng, e: rng.integers(0, 10, (e, 44, 2)).astype(np.int32),
         ("loc_x", "loc_y", "speed", "direction", "acceleration", "still_in_the_game", "tag_counts", "num_runners")),
}


@pytest.mark.parametrize("env", sorted(NUMBA_VS_CUDA_C), ids=lambda e: e.rsplit(":", 1)[1])
def test_numba_steps_equal_the_cuda_c_steps(env):
    """Each example env's Numba step against its CUDA C step on the GPU, 80 steps with resets (float
    arrays within 1e-5: steps without explicit rounding may contract multiply-adds differently)."""
    import importlib

    from warp_drive.env.env_wrapper import EnvWrapper

    module, cls = env.split(":")
    env_cls = getattr(importlib.import_module(module), cls)
    kwargs, draw, names = NUMBA_VS_CUDA_C[env]
    num_envs = 64
    w = {b: EnvWrapper(env_cls(**kwargs), num_envs=num_envs, env_backend=b) for b in ("numba", "pycuda")}
    for wrapper in w.values():
        wrapper.reset_all_envs()
    rng = np.random.default_rng(1)
    for t in range(80):
        actions = draw(rng, num_envs)
        for wrapper in w.values():
            wrapper.step_all_envs(actions)
        for name in (*names, "observations", "rewards", "_done_", "_truncated_", "_timestep_"):
            a, b = (w[k].cuda_data_manager.pull_data_from_device(name) for k in ("numba", "pycuda"))
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5, err_msg=f"{cls} step {t}: {name}")
        for wrapper in w.values():
            wrapper.reset_only_done_envs()


def test_training_on_the_numba_backend_with_a_cuda_graph(tmp_path):
    """trainer.env_backend: numba on the GPU: the rollout (Numba step, CUDA C services) in a CUDA graph."""
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.config import load_run_config
    from warp_drive.managers.numba_function_manager import NumbaFunctionManager
    from warp_drive.training.run.build import build_trainer

    raw = {"name": "tag_continuous", "env": {"num_taggers": 2, "num_runners": 8, "episode_length": 20, "seed": 1},
           "policy": {"runner": {"to_train": True}, "tagger": {"to_train": True}},
           "trainer": {"num_envs": 32, "train_batch_size": 640, "num_episodes": 96, "env_backend": "numba",
                       "use_cuda_graph": True}}
    config = load_run_config(raw)
    trainer = build_trainer(config, TagContinuous, backend="numba", results_dir=str(tmp_path), verbose=False)
    try:
        assert isinstance(trainer.engine.env_wrapper.cuda_function_manager, NumbaFunctionManager)
        trainer.train()
        assert trainer.engine.iteration == 3 and trainer.engine.graphed_rollout is not None
    finally:
        trainer.graceful_close()


def test_cartpole_numba_step_passes_the_consistency_checker():
    from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
    from warp_drive.testing.consistency import EnvironmentCPUvsGPU

    checker = EnvironmentCPUvsGPU(dual_mode_env_class=ClassicControlCartPoleEnv,
                                  env_configs={"a": {"episode_length": 500, "seed": 32145},
                                               "b": {"episode_length": 200, "seed": 54231}},
                                  gpu_env_backend="numba", num_envs=5, num_episodes=2)
    checker.test_env_reset_and_step()


def test_services_sample_and_reset_from_pools_on_the_numba_store():
    from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.services.numba_services import NumbaSampler

    w = EnvWrapper(ClassicControlCartPoleEnv(episode_length=100, reset_pool_size=3, seed=5), num_envs=3,
                   env_backend="numba")
    w.reset_all_envs()
    dm = w.cuda_data_manager
    w.env_resetter.init_reset_pool(dm, seed=12345)
    pool = dm.pull_data_from_device(dm.get_reset_pool("state"))
    dm.data_on_device_via_torch("_done_")[:] = torch.tensor([1, 1, 0], device=dm.device)
    kept = dm.pull_data_from_device("state")[2].copy()
    rows = set()
    for _ in range(200):
        w.env_resetter.reset_when_done(dm, mode="if_done", undo_done_after_reset=False)
        state = dm.pull_data_from_device("state")
        rows.add(int(np.argmin(np.abs(pool[:, 0] - state[0]).sum(-1))))
        np.testing.assert_array_equal(state[2], kept)
    assert rows == {0, 1, 2}
    sampler = NumbaSampler(w.cuda_function_manager)
    sampler.init_random(seed=3)
    sampler.register_actions(dm, "sampled_actions", 2)
    probs = torch.tensor([0.25, 0.75], device=dm.device).expand(3, 1, 2).contiguous()
    counts = np.zeros(2)
    for _ in range(400):
        sampler.sample(dm, probs, "sampled_actions")
        counts += np.bincount(dm.pull_data_from_device("sampled_actions").ravel(), minlength=2)
    assert 0.68 < counts[1] / counts.sum() < 0.82


def _rollout(w, sampler, probs, steps):
    for _ in range(steps):
        sampler.sample(w.cuda_data_manager, probs, "sampled_actions", check=False)
        w.step_all_envs()
        w.reset_only_done_envs()


def test_a_numba_rollout_is_captured_in_a_cuda_graph_and_replays_the_eager_rollout():
    """Sampler (CUDA C) + step (Numba) + reset (CUDA C), B steps, in one CUDA graph: the replay gives the
    eager run's exact results from the same start, and the time per step is printed (run with -s)."""
    import pycuda.driver as pycuda

    from warp_drive.services.sampler import Sampler

    E, B = 4096, 100
    w = _wrappers(E, episode_length=200, seed=2)["numba"]
    w.reset_all_envs()
    dm, fm = w.cuda_data_manager, w.cuda_function_manager
    sampler = Sampler(fm.services)
    sampler.init_random(seed=9)
    sampler.register_actions(dm, "sampled_actions", 2)
    probs = torch.full((E, 1, 2), 0.5, device=dm.device)
    _rollout(w, sampler, probs, 3)  # compiles the Numba kernel and loads everything before the capture
    torch.cuda.synchronize()
    start_state, start_counters = dm.state_dict(), sampler.counters_state()

    begin = time.perf_counter()
    _rollout(w, sampler, probs, B)
    torch.cuda.synchronize()
    eager_s = time.perf_counter() - begin
    eager = dm.state_dict()

    dm.load_state_dict(start_state)
    sampler.load_counters_state(start_counters)
    torch.cuda.synchronize()
    stream = pycuda.Stream()
    graph = torch.cuda.CUDAGraph()
    fm.stream = stream
    try:
        with torch.cuda.graph(graph, stream=torch.cuda.ExternalStream(stream.handle)):
            _rollout(w, sampler, probs, B)
    finally:
        fm.stream = None
    dm.load_state_dict(start_state)
    sampler.load_counters_state(start_counters)
    torch.cuda.synchronize()
    begin = time.perf_counter()
    graph.replay()
    torch.cuda.synchronize()
    graph_s = time.perf_counter() - begin
    replayed = dm.state_dict()
    for name in ("state", "observations", "sampled_actions", "rewards", "_done_", "_timestep_"):
        torch.testing.assert_close(replayed[name], eager[name], rtol=0, atol=0, msg=name)
    print(f"\nNumba CartPole rollout, E={E}, B={B}: eager {eager_s / B * 1e6:.1f} us/step, "
          f"CUDA graph {graph_s / B * 1e6:.1f} us/step ({eager_s / graph_s:.1f}x)")


def test_271_style_dynamic_import_launch_on_the_gpu():
    from warp_drive.managers.numba_managers.numba_data_manager import NumbaDataManager
    from warp_drive.managers.numba_managers.numba_function_manager import NumbaFunctionManager

    dm = NumbaDataManager(num_agents=5, num_envs=2, episode_length=2)
    fm = NumbaFunctionManager(num_agents=5, num_envs=2)
    fm.dynamic_import_numba("DummyEnv", "template_env_config.txt", "template_env_runner.txt")
    fm.initialize_functions(["testkernel"])
    dm.push_data_to_device({"X": {"data": np.ones((2, 5), np.float32), "attributes": {}},
                            "Y": {"data": np.ones((2, 5), np.float32), "attributes": {}},
                            "actions": {"data": np.zeros((2, 5, 3), np.int32), "attributes": {}}}, torch_accessible=True)
    fm.get_function("testkernel")[fm.grid, fm.block](
        dm.device_data("X"), dm.device_data("Y"), dm.device_data("_done_"), dm.device_data("actions"),
        np.float32(2.0), np.float32(100.0), np.int32(1), np.int32(2))
    assert dm.pull_data_from_device("X").tolist() == [[0.5] * 5] * 2
    assert dm.pull_data_from_device("actions")[:, :, 1].tolist() == [[1] * 5] * 2
