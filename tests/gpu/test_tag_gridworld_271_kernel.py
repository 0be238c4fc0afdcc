"""Tag gridworld's kernel with 2.7.1's parameter list (``tag_gridworld_step_271.cu``), launched from
the test builds the way 2.7.1's unit tests launch it, agrees with ``TagGridWorld.numpy_step`` step
by step: one and two blocks per env, full and partial observations, random positions and actions,
resets through the 2.7.1 reset call."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

NUM_ENVS, NUM_AGENTS, LENGTH, STEPS = 2, 5, 4, 12
PARAMS = {"wall_hit_penalty": 0.1, "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": 2.0,
          "step_cost_for_tagger": 0.01}


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("build,blocks_per_env", [("test_build", 1), ("test_build_multiblocks", 2)])
def test_2_7_1_kernel_matches_numpy_step(build, blocks_per_env, full):
    from example_envs.tag_gridworld.tag_gridworld import TagGridWorld
    from warp_drive.managers.pycuda_managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_managers.pycuda_function_manager import (
        PyCUDAEnvironmentReset,
        PyCUDAFunctionManager,
    )
    from warp_drive.utils.common import get_project_root
    from warp_drive.utils.constants import Constants
    from warp_drive.utils.data_feed import DataFeed

    rng = np.random.default_rng(blocks_per_env * 2 + full)
    episode_length = 5
    x0 = rng.integers(0, LENGTH + 1, (NUM_ENVS, NUM_AGENTS)).astype(np.int32)
    y0 = rng.integers(0, LENGTH + 1, (NUM_ENVS, NUM_AGENTS)).astype(np.int32)
    obs_dim = 4 * NUM_AGENTS + 1 if full else 6

    dm = PyCUDADataManager(num_agents=NUM_AGENTS, num_envs=NUM_ENVS, episode_length=episode_length,
                           blocks_per_env=blocks_per_env)
    fm = PyCUDAFunctionManager(num_agents=NUM_AGENTS, num_envs=NUM_ENVS, blocks_per_env=blocks_per_env)
    fm.load_cuda_from_binary_file(f"{get_project_root()}/warp_drive/cuda_bin/{build}.fatbin")
    fm.initialize_functions(["CudaTagGridWorldStep"])
    resetter = PyCUDAEnvironmentReset(function_manager=fm)
    feed = DataFeed()
    for name, value in PARAMS.items():
        feed.add_data(name=name, data=value)
    feed.add_data(name="world_boundary", data=LENGTH)
    feed.add_data(name="use_full_observation", data=full)
    feed.add_data(name="loc_x", data=x0, save_copy_and_apply_at_reset=True)
    feed.add_data(name="loc_y", data=y0, save_copy_and_apply_at_reset=True)
    dm.push_data_to_device(feed)
    tensors = DataFeed()
    tensors.add_data(name=Constants.REWARDS, data=np.zeros((NUM_ENVS, NUM_AGENTS), np.float32))
    tensors.add_data(name=Constants.OBSERVATIONS, data=np.zeros((NUM_ENVS, NUM_AGENTS, obs_dim), np.float32))
    tensors.add_data(name=Constants.ACTIONS, data=np.zeros((NUM_ENVS, NUM_AGENTS), np.int32))
    dm.push_data_to_device(tensors, torch_accessible=True)
    kernel = fm.get_function("CudaTagGridWorldStep")

    env = TagGridWorld(num_taggers=NUM_AGENTS - 1, grid_length=LENGTH, episode_length=episode_length,
                       use_full_observation=full, **PARAMS)
    host = {"loc_x": x0.copy(), "loc_y": y0.copy(), "num_taggers_on_runner": np.zeros(NUM_ENVS, np.int32),
            **{k: np.float32(v) for k, v in PARAMS.items()}, "world_boundary": np.int32(LENGTH),
            "episode_length": np.int32(episode_length), Constants.TIMESTEP: np.zeros(NUM_ENVS, np.int32),
            Constants.DONE: np.zeros(NUM_ENVS, np.int32), Constants.TRUNCATED: np.zeros(NUM_ENVS, np.int32),
            Constants.REWARDS: np.zeros((NUM_ENVS, NUM_AGENTS), np.float32),
            Constants.OBSERVATIONS: np.zeros((NUM_ENVS, NUM_AGENTS, obs_dim), np.float32)}
    for step in range(STEPS):
        resetter.reset_when_done(dm)
        done = host[Constants.DONE] == 1  # the host twin of reset_when_done
        host["loc_x"][done], host["loc_y"][done] = x0[done], y0[done]
        host[Constants.TIMESTEP][done] = 0
        host[Constants.DONE][done] = 0

        actions = rng.integers(0, 5, (NUM_ENVS, NUM_AGENTS)).astype(np.int32)
        dm.data_on_device_via_torch(Constants.ACTIONS)[:] = torch.from_numpy(actions).cuda()
        host[Constants.ACTIONS] = actions[..., None]
        kernel(dm.device_data("loc_x"), dm.device_data("loc_y"), dm.device_data(Constants.ACTIONS),
               dm.device_data(Constants.DONE), dm.device_data(Constants.REWARDS), dm.device_data(Constants.OBSERVATIONS),
               *(dm.device_data(k) for k in PARAMS), dm.device_data("use_full_observation"),
               dm.device_data("world_boundary"), dm.device_data(Constants.TIMESTEP), dm.meta_info("episode_length"),
               block=fm.block, grid=fm.grid)
        env.numpy_step(host)
        where = f"{build}, full={full}, step {step}"
        for name in ("loc_x", "loc_y", Constants.DONE, Constants.TIMESTEP):
            np.testing.assert_array_equal(dm.pull_data_from_device(name), host[name], err_msg=f"{name}, {where}")
        for name in (Constants.REWARDS, Constants.OBSERVATIONS):
            np.testing.assert_allclose(dm.pull_data_from_device(name), host[name], rtol=0, atol=1e-6,
                                       err_msg=f"{name}, {where}")
