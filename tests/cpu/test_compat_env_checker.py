"""The 2.7.1 consistency checker and data loader on the CPU.

The checker's "GPU" side runs on ``gpu_env_backend="cpu"`` here: for a vectorised env both sides
are NumPy; for a 2.7.1-style (gym-style) env the device side is a test subclass that steps all
replicas with the fixture's vectorised NumPy twin. Everything but the kernel launch is exercised.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import CUDATagGridWorld, TagGridWorld
from tests.helpers.legacy_env import CUDALegacyCrowd, LegacyCrowd, crowd_step
from warp_drive.env_cpu_gpu_consistency_checker import EnvironmentCPUvsGPU, generate_random_actions
from warp_drive.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, ConsistencyError, DataShapeError
from warp_drive.services.sampler import Sampler
from warp_drive.training.utils.data_loader import (
    create_and_push_data_placeholders,
    get_flattened_obs_size,
    get_obs,
)
from warp_drive.utils.constants import Constants
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext
from warp_drive.utils.spaces import to_gymnasium

#: Both sides run NumPy here on purpose (the module docstring): the checker's warning that says so is expected.
pytestmark = pytest.mark.filterwarnings("ignore:EnvironmentCPUvsGPU\\(gpu_env_backend='cpu'\\):UserWarning")

CROWD = {"crowded": dict(num_agents=6, grid_length=2, episode_length=5, seed=5),
         "roomy": dict(num_agents=3, grid_length=5, episode_length=4, seed=1)}


class VectorisedCrowd(CUDALegacyCrowd):
    """Stands in for the CUDA side of the 2.7.1-style env: all replicas in NumPy on a data store."""

    step = CUDAEnvironmentContext.step

    def numpy_step(self, data):
        obs, rew, done = crowd_step(
            data["loc_x"], data["loc_y"], data[Constants.ACTIONS][..., 0], data[Constants.TIMESTEP],
            int(data["grid_length"]), float(data["crowd_penalty"]), float(data["goal_reward"]),
            int(data["episode_length"]),
        )
        data[Constants.OBSERVATIONS][...] = obs
        data[Constants.REWARDS][...] = rew
        data[Constants.DONE][done] = 1


# ----------------------------------------------------------------------------- constructor
def test_checker_signature_is_2_7_1s():
    params = list(inspect.signature(EnvironmentCPUvsGPU.__init__).parameters)[1:17]
    assert params == [
        "cpu_env_class", "cuda_env_class", "dual_mode_env_class", "env_configs", "num_envs", "blocks_per_env",
        "assert_equal_num_agents_per_block", "num_episodes", "gpu_env_backend", "use_gpu_testing_mode",
        "testing_bin_filename", "env_registrar", "env_wrapper", "policy_tag_to_agent_id_map",
        "create_separate_placeholders_for_each_policy", "obs_dim_corresponding_to_num_agents",
    ]
    method = list(inspect.signature(EnvironmentCPUvsGPU.test_env_reset_and_step).parameters)[1:3]
    assert method == ["consistency_threshold_pct", "seed"]
    assert inspect.signature(EnvironmentCPUvsGPU.__init__).parameters["env_wrapper"].default is EnvWrapper


def test_checker_argument_errors():
    with pytest.raises(ConfigError, match="dual_mode_env_class"):
        EnvironmentCPUvsGPU(cpu_env_class=LegacyCrowd)
    with pytest.raises(ConfigError, match="env class"):
        EnvironmentCPUvsGPU(LegacyCrowd, {"a": {}})  # configs given where the CUDA class belongs
    checker = EnvironmentCPUvsGPU(dual_mode_env_class=TagGridWorld, gpu_env_backend="cpu")
    with pytest.raises(ConfigError, match="not both"):
        checker.test_env_reset_and_step(seed=1, seeds=(1, 2))
    with pytest.raises(ConfigError, match="percentage"):
        checker.test_env_reset_and_step(consistency_threshold_pct=0)


# ----------------------------------------------------------------------------- vectorised envs
def test_vectorised_env_consistent_with_2_7_1_keywords():
    configs = {"full": dict(num_taggers=4, grid_length=4, episode_length=20, seed=27, use_full_observation=True),
               "partial": dict(num_taggers=4, grid_length=4, episode_length=20, seed=27, use_full_observation=False)}
    checker = EnvironmentCPUvsGPU(cpu_env_class=TagGridWorld, cuda_env_class=CUDATagGridWorld, env_configs=configs,
                                  num_envs=2, num_episodes=2, gpu_env_backend="cpu")
    assert checker.vectorised
    report = checker.test_env_reset_and_step(consistency_threshold_pct=1, seed=274880)
    assert report.configs == ["full", "partial"] and report.seeds == [274880]
    assert report.episodes_completed >= 2 * 2 * 2
    assert {"loc_x", "loc_y", Constants.OBSERVATIONS, Constants.REWARDS, Constants.DONE} <= set(report.arrays)


def test_vectorised_mismatch_names_step_env_agent_and_feature():
    class Drifting(TagGridWorld):
        def numpy_step(self, data):
            super().numpy_step(data)
            if int(data[Constants.TIMESTEP][1]) == 3:
                data[Constants.OBSERVATIONS][1, 2, 5] += 0.25

    checker = EnvironmentCPUvsGPU(cpu_env_class=TagGridWorld, cuda_env_class=Drifting,
                                  env_configs={"drift": dict(num_taggers=2, grid_length=5, episode_length=8)},
                                  num_envs=3, gpu_env_backend="cpu")
    with pytest.raises(ConsistencyError) as err:
        checker.test_env_reset_and_step(seed=0)
    msg = str(err.value)
    assert "[drift, seed 0] step 2" in msg and "'observations'" in msg
    assert "env 1, agent 2, feature (5,)" in msg and "(1 of" in msg


def test_percent_threshold_follows_2_7_1_rule():
    class Off(TagContinuous):
        def numpy_step(self, data):
            super().numpy_step(data)
            data["loc_x"][...] *= np.float32(1.005)  # 0.5 % off

    cfg = {"c": dict(num_taggers=1, num_runners=2, episode_length=4, seed=1, grid_length=10.0)}
    with pytest.raises(ConsistencyError, match="loc_x"):
        EnvironmentCPUvsGPU(cpu_env_class=TagContinuous, cuda_env_class=Off, env_configs=cfg,
                            gpu_env_backend="cpu").test_env_reset_and_step(seed=0)
    EnvironmentCPUvsGPU(cpu_env_class=TagContinuous, cuda_env_class=Off, env_configs=cfg,
                        gpu_env_backend="cpu").test_env_reset_and_step(consistency_threshold_pct=1, seed=0)


def test_assert_equal_num_agents_per_block():
    checker = EnvironmentCPUvsGPU(dual_mode_env_class=TagGridWorld, env_configs={"odd": dict(num_taggers=4)},
                                  blocks_per_env=2, assert_equal_num_agents_per_block=True, gpu_env_backend="cpu")
    with pytest.raises(ConfigError, match="do not split evenly"):
        checker.test_env_reset_and_step(seed=0)


# ----------------------------------------------------------------------------- gym-style (2.7.1) envs
def test_gym_style_env_checked_like_2_7_1():
    checker = EnvironmentCPUvsGPU(cpu_env_class=LegacyCrowd, cuda_env_class=VectorisedCrowd, env_configs=CROWD,
                                  num_envs=3, num_episodes=2, gpu_env_backend="cpu")
    assert not checker.vectorised
    report = checker.test_env_reset_and_step(consistency_threshold_pct=1, seed=274880)
    assert report.steps == 2 * 5 + 2 * 4  # num_episodes * episode_length per config
    assert report.episodes_completed == 2 * 3 * 2
    assert report.arrays == [Constants.OBSERVATIONS, Constants.REWARDS]
    assert report.max_abs_error == {Constants.OBSERVATIONS: 0.0, Constants.REWARDS: 0.0}


def test_gym_style_cpu_side_can_come_from_the_registrar():
    from warp_drive.utils.env_registrar import EnvironmentRegistrar

    class Device(VectorisedCrowd):
        name = "DeviceCrowd"  # not registered: the device side is built from the class

    registrar = EnvironmentRegistrar()
    registrar.add(env_backend="cpu")(LegacyCrowd)
    EnvironmentCPUvsGPU(cpu_env_class=LegacyCrowd, cuda_env_class=Device, env_configs=CROWD,
                        num_envs=2, gpu_env_backend="cpu", env_registrar=registrar).test_env_reset_and_step()


@pytest.mark.parametrize("bug,where", [("reward", "'rewards' differs at env 0, agent 2"),
                                       ("done", "'done' differs at env 0"),
                                       ("obs", "'observations' differs at env 2, agent 1, feature (3,)")])
def test_gym_style_mismatches_are_localised(bug, where):
    class Buggy(VectorisedCrowd):
        def numpy_step(self, data):
            super().numpy_step(data)
            if bug == "reward":
                data[Constants.REWARDS][:, 2] += 0.5
            elif bug == "done" and int(data[Constants.TIMESTEP][0]) == 2:
                data[Constants.DONE][0] = 1
            elif bug == "obs" and int(data[Constants.TIMESTEP][2]) == 3:
                data[Constants.OBSERVATIONS][2, 1, 3] += 0.1

    checker = EnvironmentCPUvsGPU(cpu_env_class=LegacyCrowd, cuda_env_class=Buggy, env_configs=CROWD, num_envs=3,
                                  gpu_env_backend="cpu")
    with pytest.raises(ConsistencyError, match="crowded") as err:
        checker.test_env_reset_and_step(seed=7)
    assert where in str(err.value)


def test_generate_random_actions():
    env = LegacyCrowd(num_agents=4)
    state = np.random.get_state()[1].copy()
    a = generate_random_actions(env, 3, seed=11)
    assert np.array_equal(np.random.get_state()[1], state)  # the global RNG is untouched
    assert a == generate_random_actions(env, 3, seed=11) and len(a) == 3
    assert all(set(d) == {0, 1, 2, 3} and all(0 <= v < 5 for v in d.values()) for d in a)
    tag = TagContinuous(num_taggers=1, num_runners=2, num_acceleration_levels=3, num_turn_levels=4)
    b = generate_random_actions(tag, 2, seed=np.random.default_rng(0))
    assert b[0][0].shape == (2,) and b[0][0].dtype == np.int32 and (b[0][0] < [4, 5]).all()


# ----------------------------------------------------------------------------- data loader
@pytest.fixture()
def tag_wrapper():
    env = TagContinuous(num_taggers=2, num_runners=3, episode_length=5, seed=1)
    wrapper = EnvWrapper(env, num_envs=4, env_backend="cpu")
    return wrapper


def test_create_and_push_data_placeholders_2_7_1_layout(tag_wrapper):
    env = tag_wrapper.env
    sampler = Sampler(tag_wrapper.cuda_function_manager)
    policy_map = {"tagger": list(env.taggers), "runner": list(env.runners)}
    create_and_push_data_placeholders(tag_wrapper, sampler, policy_map, training_batch_size_per_env=7)
    dm = tag_wrapper.cuda_data_manager
    assert not tag_wrapper.reset_on_host  # the first reset happened here
    expect = {
        Constants.OBSERVATIONS: (4, 5, env.obs_dim), Constants.ACTIONS: (4, 5, 2), "sampled_actions_0": (4, 5, 1),
        "sampled_actions_1": (4, 5, 1), Constants.REWARDS: (4, 5),
        "processed_observations_batch_tagger": (7, 4, 2, env.obs_dim), "processed_observations_batch_runner": (7, 4, 3, env.obs_dim),
        "sampled_actions_batch_tagger": (7, 4, 2, 2), "rewards_batch_runner": (7, 4, 3), "done_flags_batch": (7, 4),
    }
    for name, shape in expect.items():
        assert dm.get_shape(name) == shape, name
        assert dm.is_data_on_device_via_torch(name), name
    assert Constants.OBSERVATIONS in dm.reset_data_list
    # the sampler draws into the per-head arrays 2.7.1 registered
    sampler.init_random(seed=3)
    probs = torch.zeros((4, 5, len(env.acceleration_actions)))
    probs[..., 2] = 1.0
    sampler.sample(dm, probs, "sampled_actions_0")
    assert (dm.pull_data_from_device("sampled_actions_0") == 2).all()
    # idempotent: a second call accepts everything already there
    create_and_push_data_placeholders(tag_wrapper, None, policy_map, training_batch_size_per_env=7)


def test_separate_placeholders_per_policy(tag_wrapper):
    env = tag_wrapper.env
    policy_map = {"tagger": list(env.taggers), "runner": list(env.runners)}
    create_and_push_data_placeholders(tag_wrapper, None, policy_map, create_separate_placeholders_for_each_policy=True,
                                      push_data_batch_placeholders=False)
    dm = tag_wrapper.cuda_data_manager
    assert dm.get_shape("observations_tagger") == (4, 2, env.obs_dim)
    assert dm.get_shape("sampled_actions_runner") == (4, 3, 2) and dm.get_shape("sampled_actions_1_runner") == (4, 3, 1)
    assert dm.get_shape("rewards_tagger") == (4, 2)
    obs = tag_wrapper.reset_observations
    np.testing.assert_array_equal(dm.pull_data_from_device("observations_runner")[0], np.stack([obs[a] for a in env.runners]))
    with pytest.raises(ConfigError, match="two policies"):
        create_and_push_data_placeholders(tag_wrapper, None, None, create_separate_placeholders_for_each_policy=True,
                                          push_data_batch_placeholders=False)


def test_data_loader_errors(tag_wrapper):
    with pytest.raises(ConfigError, match="training_batch_size_per_env"):
        create_and_push_data_placeholders(tag_wrapper)
    with pytest.raises(ConfigError, match="not mapped"):
        create_and_push_data_placeholders(tag_wrapper, policy_tag_to_agent_id_map={"a": [0, 1]},
                                          push_data_batch_placeholders=False)
    with pytest.raises(ConfigError, match="two policies"):
        create_and_push_data_placeholders(tag_wrapper, policy_tag_to_agent_id_map={"a": [0, 1, 2], "b": [2, 3, 4]},
                                          push_data_batch_placeholders=False)
    with pytest.raises(ConfigError, match="agent-first"):
        create_and_push_data_placeholders(tag_wrapper, obs_dim_corresponding_to_num_agents="last",
                                          push_data_batch_placeholders=False)
    with pytest.raises(ConfigError, match="'first' or 'last'"):
        create_and_push_data_placeholders(tag_wrapper, obs_dim_corresponding_to_num_agents="middle",
                                          push_data_batch_placeholders=False)
    tag_wrapper.reset_all_envs()
    tag_wrapper.cuda_data_manager.push_data_to_device({"rewards_batch_shared": np.zeros((3, 4, 5), np.float32)},
                                                      torch_accessible=True)
    with pytest.raises(DataShapeError, match="rewards_batch_shared"):
        create_and_push_data_placeholders(tag_wrapper, training_batch_size_per_env=7)
    passthrough = EnvWrapper(LegacyCrowd(seed=0), env_backend="cpu")
    with pytest.raises(ConfigError, match="gym style"):
        create_and_push_data_placeholders(passthrough, push_data_batch_placeholders=False)


def test_get_obs_and_flattened_size():
    obs = {0: np.arange(6).reshape(2, 3), 1: np.arange(6, 12).reshape(2, 3)}
    assert get_obs(obs, [0, 1]).shape == (2, 2, 3)
    last = get_obs(obs, [0, 1], "last")
    assert last.shape == (3, 2, 2) and last[0, 1, 1] == obs[1][1, 0]
    assert get_obs({0: {"a": [1, 2]}}, [0], obs_key="a").tolist() == [[1, 2]]
    gym_spaces = pytest.importorskip("gym.spaces")
    space = gym_spaces.Dict({"x": gym_spaces.Box(0.0, 1.0, (2, 3)), "action_mask": gym_spaces.Box(0.0, 1.0, (5,))})
    assert get_flattened_obs_size(space) == 6
    assert get_flattened_obs_size(to_gymnasium(space)) == 6
    assert get_flattened_obs_size(gym_spaces.Box(0.0, 1.0, (4, 2))) == 8


@pytest.mark.filterwarnings("default")
def test_a_cpu_only_check_says_it_compares_the_numpy_step_with_itself():
    with pytest.warns(UserWarning, match=r"compares TagGridWorld's NumPy step with itself.*gpu_env_backend='pycuda' on a GPU"):
        EnvironmentCPUvsGPU(dual_mode_env_class=TagGridWorld, gpu_env_backend="cpu")
