"""TagGridWorld NumPy step: hand-computed scenarios on a two-env data store (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from example_envs.tag_gridworld import constants as C
from example_envs.tag_gridworld.tag_gridworld import (
    TagGridWorld,
    TagGridWorldWithResetPool,
)
from warp_drive.errors import ConfigError
from warp_drive.utils.constants import Constants
from warp_drive.testing.rollout_animation import numpy_data_store

F32 = np.float32
STAY, RIGHT, LEFT, UP, DOWN = range(5)


def make_env(**overrides):
    kwargs = {"num_taggers": 2, "grid_length": 4, "episode_length": 5, "wall_hit_penalty": 0.1,
                  "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": 2.0, "step_cost_for_tagger": 0.01}
    kwargs.update(overrides)
    return TagGridWorld(**kwargs)


def setup(env, positions, actions):
    """positions[e] = [(x, y) per agent]; actions[e] = [action per agent]."""
    data = numpy_data_store(env, num_envs=len(positions))
    pos = np.asarray(positions, np.int32)
    data["loc_x"][...] = pos[..., 0]
    data["loc_y"][...] = pos[..., 1]
    data[Constants.ACTIONS][..., 0] = actions
    return data


def test_action_table_is_the_reference_one():
    assert C.ACTIONS == ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))
    consts = make_env().cuda_constants()
    assert consts["kActionDx"] == (0, 1, -1, 0, 0) and consts["kActionDy"] == (0, 0, 0, 1, -1)


def test_tag_and_wall_hits_rewards_and_done():
    env = make_env()
    data = setup(
        env,
        positions=[[(1, 1), (4, 0), (2, 1)], [(0, 0), (2, 2), (3, 3)]],
        actions=[[RIGHT, RIGHT, STAY], [LEFT, STAY, DOWN]],
    )
    env.numpy_step(data)
    np.testing.assert_array_equal(data["loc_x"], [[2, 4, 2], [0, 2, 3]])
    np.testing.assert_array_equal(data["loc_y"], [[1, 0, 1], [0, 2, 2]])
    r = data[Constants.REWARDS]
    # env 0: tagger 0 lands on the runner; tagger 1 hits the east wall
    np.testing.assert_array_equal(r[0], [F32(10.0) + F32(0), F32(10.0) + F32(-0.1), F32(-2.0) + F32(0)])
    # env 1: no tag; tagger 0 hits the west wall
    np.testing.assert_array_equal(r[1], [F32(-0.01) + F32(-0.1), F32(-0.01), F32(0.01)])
    np.testing.assert_array_equal(data["num_taggers_on_runner"], [1, 0])
    np.testing.assert_array_equal(data[Constants.DONE], [1, 0])
    np.testing.assert_array_equal(data[Constants.TIMESTEP], [1, 1])


def test_two_taggers_on_the_runner_count_twice_but_reward_once():
    env = make_env()
    data = setup(env, [[(1, 2), (3, 2), (2, 2)], [(0, 0), (0, 1), (4, 4)]], [[RIGHT, LEFT, STAY], [STAY] * 3])
    env.numpy_step(data)
    np.testing.assert_array_equal(data["num_taggers_on_runner"], [2, 0])
    np.testing.assert_array_equal(data[Constants.REWARDS][0], F32([10.0, 10.0, -2.0]))


def test_full_observation_is_exact():
    env = make_env()
    data = setup(env, [[(1, 1), (4, 0), (2, 1)], [(0, 0), (2, 2), (3, 3)]], [[RIGHT, RIGHT, STAY], [LEFT, STAY, DOWN]])
    env.numpy_step(data)
    obs = data[Constants.OBSERVATIONS]
    assert obs.shape == (2, 3, 4 * 3 + 1)
    q = F32(4.0)
    shared0 = [F32(2) / q, F32(4) / q, F32(2) / q, F32(1) / q, F32(0) / q, F32(1) / q, 0, 0, 1]
    for i in range(3):
        one_hot = [1.0 if j == i else 0.0 for j in range(3)]
        np.testing.assert_array_equal(obs[0, i], F32([*shared0, *one_hot, F32(1) / F32(5)]))
    np.testing.assert_array_equal(obs[1, 2, :6], F32([0, 0.5, 0.75, 0, 0.5, 0.5]))


def test_partial_observation_targets_runner_or_nearest_tagger():
    env = make_env(num_taggers=3, use_full_observation=False)
    # env 0: taggers 1 and 2 tie for the runner (distance^2 = 1) -> tagger 1 (lower id)
    data = setup(env, [[(0, 0), (2, 3), (3, 2), (2, 2)], [(4, 4), (0, 4), (4, 0), (1, 1)]], [[STAY] * 4] * 2)
    env.numpy_step(data)
    obs = data[Constants.OBSERVATIONS]
    assert env.obs_dim == 6 and obs.shape == (2, 4, 6)
    q, t = F32(4.0), F32(1) / F32(5)
    np.testing.assert_array_equal(obs[0, 3], [F32(2) / q, F32(2) / q, F32(2) / q, F32(3) / q, 1.0, t])
    np.testing.assert_array_equal(obs[0, 0], [0.0, 0.0, F32(2) / q, F32(2) / q, 0.0, t])
    # env 1: the runner at (1, 1): tagger 1 (0, 4) d2 = 10, tagger 2 (4, 0) d2 = 10, tagger 0 d2 = 18
    np.testing.assert_array_equal(obs[1, 3, 2:4], [F32(0) / q, F32(4) / q])


def test_done_at_episode_end():
    env = make_env(episode_length=2)
    data = setup(env, [[(0, 0), (0, 1), (4, 4)], [(0, 0), (0, 1), (4, 4)]], [[STAY] * 3] * 2)
    env.numpy_step(data)
    np.testing.assert_array_equal(data[Constants.DONE], [0, 0])
    env.numpy_step(data)
    np.testing.assert_array_equal(data[Constants.DONE], [1, 1])
    assert data[Constants.OBSERVATIONS][0, 0, -1] == 1.0


def test_default_start_and_reset_observation():
    env = make_env()
    obs = env.reset()
    assert sorted(obs) == [0, 1, 2]
    np.testing.assert_array_equal(obs[0][:3], F32([2, 2, 0]) / F32(4))  # taggers at L // 2, runner at 0
    assert obs[0][-1] == 0.0 and env.observation_space[0].contains(obs[0])
    np.testing.assert_array_equal(env.agent_types, [C.TAGGER, C.TAGGER, C.RUNNER])


def test_reset_pool_rows_and_pushed_layout():
    env = TagGridWorldWithResetPool(num_taggers=3, grid_length=6, seed=7, reset_pool_size=4)
    pools = env.get_reset_pool_dictionary()
    assert set(pools) == {"loc_x_reset_pool", "loc_y_reset_pool"}
    px = pools["loc_x_reset_pool"]["data"]
    assert px.shape == (4, 4) and px.dtype == np.int32
    assert pools["loc_x_reset_pool"]["attributes"]["reset_target"] == "loc_x"
    assert px[:, :3].min() >= 1 and px[:, :3].max() <= 5 and (px[:, 3] == 0).all()
    env.reset()
    feed = env.get_data_dictionary()
    assert not feed["loc_x"]["attributes"]["save_copy_and_apply_at_reset"]
    again = TagGridWorldWithResetPool(num_taggers=3, grid_length=6, seed=7, reset_pool_size=4)
    np.testing.assert_array_equal(again.pool_x, env.pool_x)  # seeded


@pytest.mark.parametrize(
    "cls, kwargs, key",
    [
        (TagGridWorld, {"num_taggers": 0}, "num_taggers"),
        (TagGridWorld, {"grid_length": 0}, "grid_length"),
        (TagGridWorld, {"episode_length": -1}, "episode_length"),
        (TagGridWorld, {"wall_hit_penalty": -0.1}, "wall_hit_penalty"),
        (TagGridWorld, {"tag_penalty_for_runner": -2.0}, "tag_penalty_for_runner"),
        (TagGridWorld, {"starting_location_x": [0, 1]}, "starting_location_x"),
        (TagGridWorld, {"grid_lenght": 5}, "grid_lenght"),
        (TagGridWorldWithResetPool, {"reset_pool_size": 1}, "reset_pool_size"),
        (TagGridWorldWithResetPool, {"reset_pool_sise": 3}, "reset_pool_sise"),
    ],
)
def test_bad_config_raises_config_error_naming_the_key(cls, kwargs, key):
    with pytest.raises(ConfigError, match=key):
        cls(**kwargs)
