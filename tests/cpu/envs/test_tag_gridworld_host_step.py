"""TagGridWorld without a wrapper steps one env on the host, gym style (2.7.1's TagGridWorld did):
``reset()`` then ``step({agent_id: action}) -> (obs, rewards, {"__all__": done}, {})``.

Checked against the vectorised ``numpy_step`` on a data store of the same state and actions, and
on hand-computed scenarios; bad calls get typed errors. No GPU needed.
"""

from __future__ import annotations

import numpy as np
import pytest

from example_envs.tag_gridworld.tag_gridworld import TagGridWorld, TagGridWorldWithResetPool
from warp_drive.errors import SpaceMismatchError, UsageError
from warp_drive.utils.constants import Constants
from warp_drive.testing.rollout_animation import numpy_data_store

STAY, RIGHT, LEFT, UP, DOWN = range(5)


def make_env(**overrides):
    kwargs = dict(num_taggers=3, grid_length=3, episode_length=6, wall_hit_penalty=0.25,
                  tag_reward_for_tagger=4.0, tag_penalty_for_runner=3.0, step_cost_for_tagger=0.5)
    kwargs.update(overrides)
    return TagGridWorld(**kwargs)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_host_step_matches_numpy_step_on_the_same_state_and_actions(full, seed):
    rng = np.random.default_rng(seed)
    start_x, start_y = rng.integers(0, 4, 4), rng.integers(0, 4, 4)
    make = lambda: make_env(starting_location_x=start_x, starting_location_y=start_y,  # noqa: E731
                            use_full_observation=full)
    env, twin = make(), make()
    obs0 = env.reset()
    store = numpy_data_store(twin)  # one env, laid out like the EnvWrapper's store
    np.testing.assert_array_equal(np.stack([obs0[a] for a in range(4)]), store[Constants.OBSERVATIONS][0])
    for _ in range(8):  # past the time limit: both keep stepping, as 2.7.1's env did
        actions = rng.integers(0, 5, 4)
        obs, rew, done, info = env.step({a: int(actions[a]) for a in range(4)})
        store[Constants.ACTIONS][0, :, 0] = actions
        store[Constants.DONE][:] = 0
        twin.numpy_step(store)
        assert sorted(obs) == sorted(rew) == [0, 1, 2, 3] and info == {}
        np.testing.assert_array_equal(np.stack([obs[a] for a in range(4)]), store[Constants.OBSERVATIONS][0])
        np.testing.assert_array_equal(np.array([rew[a] for a in range(4)], np.float32), store[Constants.REWARDS][0])
        assert done == {"__all__": bool(store[Constants.DONE][0])}
        assert env.timestep == store[Constants.TIMESTEP][0]


def test_hand_computed_episode():
    # 3 taggers at (0, 0), (3, 3), (1, 2); the runner at (2, 2); grid 0..3, 6 steps
    env = make_env(starting_location_x=[0, 3, 1, 2], starting_location_y=[0, 3, 2, 2])
    obs = env.reset()
    assert obs[1][[0, 1, 2, 3]].tolist() == pytest.approx([0.0, 1.0, 1 / 3, 2 / 3])  # x row / L
    assert obs[1][-1] == 0.0

    # tagger 0 walks into the left wall, tagger 1 up into the top wall, the runner dodges right
    obs, rew, done, _ = env.step({0: LEFT, 1: UP, 2: STAY, 3: RIGHT})
    assert [rew[a] for a in range(4)] == pytest.approx([-0.5 - 0.25, -0.5 - 0.25, -0.5, 0.5])
    assert done == {"__all__": False}
    assert obs[2][-1] == pytest.approx(1 / 6)
    assert obs[2][4:8].tolist() == pytest.approx([0.0, 1.0, 2 / 3, 2 / 3])  # y row: nobody moved vertically
    assert obs[2][12:16].tolist() == [0.0, 0.0, 1.0, 0.0]  # is-self row of agent 2

    # tagger 1 steps down onto the runner's cell (3, 2): tagged, the episode ends
    obs, rew, done, _ = env.step({0: STAY, 1: DOWN, 2: STAY, 3: STAY})
    assert [rew[a] for a in range(4)] == pytest.approx([4.0, 4.0, 4.0, -3.0])
    assert done == {"__all__": True}
    assert obs[3][[0, 1, 2, 3]].tolist() == pytest.approx([0.0, 1.0, 1 / 3, 1.0])


def test_time_limit_ends_the_episode_and_reset_restarts_it():
    env = make_env(episode_length=2, starting_location_x=[0, 0, 0, 3], starting_location_y=[0, 0, 0, 3])
    env.reset()
    stay = {a: STAY for a in range(4)}
    assert env.step(stay)[2] == {"__all__": False}
    obs, _, done, _ = env.step(stay)
    assert done == {"__all__": True} and obs[0][-1] == 1.0
    obs = env.reset()
    assert env.timestep == 0 and obs[0][-1] == 0.0
    assert env.step(stay)[2] == {"__all__": False}


def test_partial_observation_names_the_nearest_tagger_for_the_runner():
    env = make_env(use_full_observation=False, starting_location_x=[0, 3, 2, 3], starting_location_y=[0, 0, 3, 3])
    env.reset()
    obs, *_ = env.step({0: STAY, 1: STAY, 2: STAY, 3: STAY})
    assert obs[3].tolist() == pytest.approx([1.0, 1.0, 2 / 3, 1.0, 1.0, 1 / 6])  # tagger 2 at (2, 3)
    assert obs[0].tolist() == pytest.approx([0.0, 0.0, 1.0, 1.0, 0.0, 1 / 6])  # taggers see the runner


def test_numpy_integer_actions_and_the_reset_pool_env():
    env = TagGridWorldWithResetPool(num_taggers=2, grid_length=4, episode_length=3, seed=7)
    env.reset()  # pool envs start from the default layout on the host
    obs, rew, done, _ = env.step({np.int64(a): np.int32(RIGHT) for a in range(3)})
    assert rew[2] == pytest.approx(env.step_cost_for_tagger) and done == {"__all__": False}


def test_bad_calls_get_typed_errors():
    env = make_env()
    with pytest.raises(UsageError, match="call reset"):
        env.step({a: STAY for a in range(4)})
    env.reset()
    with pytest.raises(UsageError, match=r"pass \{agent_id: action\} for the 4 agents"):
        env.step(np.zeros((1, 4, 1), np.int32))
    with pytest.raises(SpaceMismatchError, match="each agent id 0..3"):
        env.step({0: STAY, 1: STAY, 2: STAY})
    with pytest.raises(SpaceMismatchError, match=r"agent 2 is 5; it must be an integer in \[0, 5\)"):
        env.step({0: STAY, 1: STAY, 2: 5, 3: STAY})
    with pytest.raises(SpaceMismatchError, match="agent 1 is 1.0"):
        env.step({0: STAY, 1: 1.0, 2: STAY, 3: STAY})
    assert env.timestep == 0  # refused steps change nothing
