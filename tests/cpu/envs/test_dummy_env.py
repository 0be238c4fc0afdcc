"""DummyEnv NumPy step (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from example_envs import get_default_config_path, get_example_env_class
from example_envs.dummy_env.dummy_env import DummyEnv
from warp_drive.errors import ConfigError
from warp_drive.utils.constants import Constants
from warp_drive.testing.rollout_animation import numpy_data_store

F32 = np.float32


def test_dummy_step_updates_observes_and_rewards():
    env = DummyEnv(num_agents=3, episode_length=10, multiplier=2.0, target=100.0)
    data = numpy_data_store(env, num_envs=2)
    data[Constants.ACTIONS][..., 0] = [[1, 0, 1], [0, 0, 0]]
    env.numpy_step(data)
    np.testing.assert_array_equal(data["x"], F32([[0.5, 2, 1.5], [1, 2, 3]]))
    np.testing.assert_array_equal(data["y"], F32([[2, 2, 6], [1, 2, 3]]))
    np.testing.assert_array_equal(data[Constants.OBSERVATIONS][0, 2], F32([1.5, 6]))
    np.testing.assert_array_equal(data[Constants.REWARDS][0], F32([2, 2, 6]) / F32(100))
    np.testing.assert_array_equal(data[Constants.DONE], [0, 0])
    np.testing.assert_array_equal(data[Constants.TIMESTEP], [1, 1])


def test_dummy_done_on_target_or_time_limit():
    env = DummyEnv(num_agents=2, episode_length=4, multiplier=4.0, target=30.0)
    data = numpy_data_store(env, num_envs=2)
    data[Constants.ACTIONS][..., 0] = [[1, 1], [0, 0]]
    env.numpy_step(data)  # env 0: y = (4, 8)
    env.numpy_step(data)  # env 0: y = (16, 32) >= 30 -> done
    np.testing.assert_array_equal(data[Constants.DONE], [1, 0])
    env.numpy_step(data)
    env.numpy_step(data)  # t = 4 = T
    np.testing.assert_array_equal(data[Constants.DONE], [1, 1])


def test_dummy_bad_config():
    with pytest.raises(ConfigError, match="multiplier"):
        DummyEnv(multiplier=0.0)
    with pytest.raises(ConfigError, match="num_agent"):
        DummyEnv(num_agent=3)


@pytest.mark.parametrize("name", ["tag_continuous", "tag_gridworld", "tag_gridworld_with_reset_pool", "dummy_env"])
def test_registry_finds_class_and_config(name):
    cls = get_example_env_class(name)
    assert cls.cuda_source.is_file()
    assert get_default_config_path(name).is_file()


def test_registry_unknown_name():
    with pytest.raises(ConfigError, match="tag_continuous"):
        get_example_env_class("tag_continous")
