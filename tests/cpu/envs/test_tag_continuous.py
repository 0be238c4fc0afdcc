"""TagContinuous NumPy step: hand-computed scenarios on a two-env data store (no GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from example_envs.tag_continuous import constants as C
from example_envs.tag_continuous.tag_continuous import TagContinuous
from warp_drive.errors import ConfigError
from warp_drive.utils.constants import Constants
from warp_drive.testing.rollout_animation import numpy_data_store

F32 = np.float32
NOOP = (0, 0)


def make_env(**overrides):
    """Small env with distinct reward values so every term is visible in a sum."""
    kwargs = {
        "num_taggers": 1, "num_runners": 2, "grid_length": 10.0, "episode_length": 10, "seed": 3,
        "tagging_distance": 0.1, "tag_reward_for_tagger": 2.0, "tag_penalty_for_runner": -3.0,
        "step_penalty_for_tagger": -0.5, "step_reward_for_runner": 0.25, "end_of_game_reward_for_runner": 1.0,
        "edge_hit_penalty": -0.1, "min_acceleration": -1.0, "max_acceleration": 1.0, "num_acceleration_levels": 3,
        "min_turn": -math.pi / 2, "max_turn": math.pi / 2, "num_turn_levels": 3,
    }
    kwargs.update(overrides)
    return TagContinuous(**kwargs)


def make_store(env, num_envs=2):
    data = numpy_data_store(env, num_envs)
    for name in ("speed", "acceleration", "direction"):
        data[name][...] = 0.0
    return data


def place(data, env_id, positions):
    """positions: {agent_id: (x, y)}."""
    for agent, (x, y) in positions.items():
        data["loc_x"][env_id, agent] = x
        data["loc_y"][env_id, agent] = y


def step(env, data, actions=None):
    data[Constants.ACTIONS][...] = NOOP if actions is None else actions
    env.numpy_step(data)


def roles(env):
    tagger = int(env.tagger_ids[0])
    runners = [i for i in range(env.num_agents) if i not in env.taggers]
    return tagger, runners


# --------------------------------------------------------------------------------- tagging
def test_tag_rewards_tagger_and_runner_and_removes_runner():
    env = make_env()
    data = make_store(env)
    tagger, (near, far) = roles(env)
    place(data, 0, {tagger: (5.0, 5.0), near: (5.5, 5.0), far: (8.0, 8.0)})  # margin = 1.0
    place(data, 1, {tagger: (5.0, 5.0), near: (7.0, 5.0), far: (8.0, 8.0)})
    step(env, data)

    r = data[Constants.REWARDS]
    assert r[0, tagger] == F32(-0.5) + F32(2.0)
    assert r[0, near] == F32(0.25) + F32(-3.0)
    assert r[0, far] == F32(0.25)
    np.testing.assert_array_equal(r[1, [tagger, near, far]], F32([-0.5, 0.25, 0.25]))
    assert data["still_in_the_game"][0, near] == 0 and data["still_in_the_game"][0, far] == 1
    assert data["still_in_the_game"][1].tolist() == [1, 1, 1]
    np.testing.assert_array_equal(data["num_runners"], [1, 2])
    assert data["tag_counts"][0, tagger] == 1 and data["tag_counts"][0, near] == 1
    np.testing.assert_array_equal(data[Constants.DONE], [0, 0])
    np.testing.assert_array_equal(data[Constants.TIMESTEP], [1, 1])


def test_tagged_runner_stays_out_and_gets_nothing():
    env = make_env()
    data = make_store(env)
    tagger, (near, far) = roles(env)
    place(data, 0, {tagger: (5.0, 5.0), near: (5.5, 5.0), far: (8.0, 8.0)})
    step(env, data)
    step(env, data)
    assert data[Constants.REWARDS][0, near] == 0.0  # out of the game: no step reward, no tag
    assert data["tag_counts"][0, tagger] == 0
    np.testing.assert_array_equal(data["num_runners"], [1, 2])


def test_two_runners_tagging_same_tagger_credit_twice():
    env = make_env()
    data = make_store(env)
    tagger, (a, b) = roles(env)
    place(data, 0, {tagger: (5.0, 5.0), a: (5.5, 5.0), b: (5.0, 4.5)})
    place(data, 1, {tagger: (5.0, 5.0), a: (5.5, 5.0), b: (9.0, 9.0)})
    step(env, data)
    r = data[Constants.REWARDS]
    assert r[0, tagger] == F32(-0.5) + F32(2) * F32(2.0)
    assert r[1, tagger] == F32(-0.5) + F32(1) * F32(2.0)
    assert data["tag_counts"][0, tagger] == 2
    np.testing.assert_array_equal(data["num_runners"], [0, 1])
    np.testing.assert_array_equal(data[Constants.DONE], [1, 0])  # all runners tagged in env 0


def test_nearest_tagger_gets_the_credit_and_ties_go_to_lower_id():
    env = make_env(num_taggers=2, num_runners=2, tagging_distance=0.2)  # margin 2
    data = make_store(env)
    t0, t1 = (int(i) for i in env.tagger_ids)
    r0, r1 = [i for i in range(4) if i not in env.taggers]
    place(data, 0, {t0: (5.0, 5.0), t1: (6.5, 5.0), r0: (6.0, 5.0), r1: (1.0, 1.0)})  # t1 nearer
    place(data, 1, {t0: (4.0, 5.0), t1: (6.0, 5.0), r0: (5.0, 5.0), r1: (1.0, 1.0)})  # tie
    step(env, data)
    np.testing.assert_array_equal(data["tag_counts"][0, [t0, t1]], [0, 1])
    np.testing.assert_array_equal(data["tag_counts"][1, [t0, t1]], [1, 0])


def test_runner_keeps_playing_when_exit_disabled():
    env = make_env(runner_exits_game_after_tagged=False)
    data = make_store(env)
    tagger, (near, far) = roles(env)
    place(data, 0, {tagger: (5.0, 5.0), near: (5.5, 5.0), far: (8.0, 8.0)})
    step(env, data)
    step(env, data)
    assert data["still_in_the_game"][0, near] == 1
    assert data["tag_counts"][0, tagger] == 1  # tagged again on the second step
    np.testing.assert_array_equal(data["num_runners"], [2, 2])


# --------------------------------------------------------------------------------- dynamics
def test_wall_hit_clips_position_and_costs_edge_penalty():
    env = make_env()
    data = make_store(env)
    tagger, (a, b) = roles(env)
    place(data, 0, {tagger: (1.0, 1.0), a: (9.5, 5.0), b: (5.0, 0.25)})
    data["speed"][0, a] = 1.0  # heading east at top speed
    data["speed"][0, b] = 1.0
    data["direction"][0, b] = F32(3 * math.pi / 2)  # heading south
    step(env, data)
    assert data["loc_x"][0, a] == F32(10.0)
    assert data["loc_y"][0, b] == F32(0.0)
    np.testing.assert_array_equal(data["edge_hit_reward_penalty"][0, [a, b, tagger]], F32([-0.1, -0.1, 0.0]))
    assert data[Constants.REWARDS][0, a] == F32(-0.1) + F32(0.25)
    assert data["speed"][0, a] == 1.0 and data["acceleration"][0, a] == 0.0  # at top speed: acc reset
    assert data[Constants.REWARDS][1, a] == F32(0.25)


def test_acceleration_and_turn_actions_follow_the_tables():
    env = make_env()
    np.testing.assert_allclose(env.acceleration_actions, [0, -1, 0, 1])
    np.testing.assert_allclose(env.turn_actions, [0, -math.pi / 2, 0, math.pi / 2], rtol=1e-6)
    data = make_store(env)
    tagger, (a, b) = roles(env)
    place(data, 0, {tagger: (1.0, 1.0), a: (5.0, 5.0), b: (8.0, 8.0)})
    data["max_speed"] = F32(1.0)
    data["skill_levels"][...] = 2.0  # top speed 2
    actions = np.zeros((2, 3, 2), np.int32)
    actions[0, a] = (3, 1)  # accelerate +1, turn -pi/2
    step(env, data, actions)
    assert data["speed"][0, a] == 1.0
    assert data["acceleration"][0, a] == 1.0  # below top speed: acceleration is kept
    assert data["direction"][0, a] == np.fmod(F32(0) - F32(math.pi / 2), C.TWO_PI) + C.TWO_PI
    np.testing.assert_allclose(data["loc_y"][0, a], 4.0, atol=1e-6)  # moved 1 south
    np.testing.assert_allclose(data["loc_x"][0, a], 5.0, atol=1e-6)
    step(env, data, actions)  # speed 1 + (1 + 1) = 3 -> clipped to 2, acceleration reset
    assert data["speed"][0, a] == 2.0 and data["acceleration"][0, a] == 0.0


# --------------------------------------------------------------------------------- episode end
def test_end_of_episode_reward_and_done():
    env = make_env(episode_length=3)
    data = make_store(env)
    tagger, (near, far) = roles(env)
    place(data, 0, {tagger: (5.0, 5.0), near: (5.5, 5.0), far: (8.0, 8.0)})
    place(data, 1, {tagger: (5.0, 5.0), near: (2.0, 2.0), far: (8.0, 8.0)})
    data[Constants.TIMESTEP][...] = 2  # the next step is t = T
    step(env, data)
    r = data[Constants.REWARDS]
    assert r[0, near] == F32(0.25) + F32(-3.0)  # tagged on the final step: tag penalty only
    assert r[0, far] == F32(0.25) + F32(1.0)
    assert r[0, tagger] == F32(-0.5) + F32(2.0)
    np.testing.assert_array_equal(r[1, [near, far]], [F32(1.25), F32(1.25)])
    np.testing.assert_array_equal(data[Constants.DONE], [1, 1])


def test_not_done_before_the_last_step():
    env = make_env(episode_length=3)
    data = make_store(env)
    tagger, (a, b) = roles(env)
    place(data, 0, {tagger: (1.0, 1.0), a: (5.0, 5.0), b: (8.0, 8.0)})
    place(data, 1, {tagger: (1.0, 1.0), a: (5.0, 5.0), b: (8.0, 8.0)})
    step(env, data)
    step(env, data)
    np.testing.assert_array_equal(data[Constants.DONE], [0, 0])
    assert data[Constants.REWARDS][0, a] == F32(0.25)


# --------------------------------------------------------------------------------- observations
def _rel(v_other, v_self, scale):
    return (F32(v_other) - F32(v_self)) / F32(scale)


def test_partial_observation_picks_k_nearest_with_ties_by_id():
    env = make_env(num_taggers=1, num_runners=4, use_full_observation=False, num_other_agents_observed=2,
                   tagging_distance=0.01)
    data = make_store(env)
    assert env.obs_dim == 7 * 2 + 1
    pos = {0: (5.0, 5.0), 1: (6.0, 5.0), 2: (4.0, 5.0), 3: (5.0, 7.0), 4: (9.0, 9.0)}
    place(data, 0, pos)
    place(data, 1, pos)
    data["direction"][:, :] = F32([0.0, 1.0, 2.0, 3.0, 4.0])
    data["still_in_the_game"][1, 1] = 0  # env 1: agent 1 is out
    step(env, data)
    obs = data[Constants.OBSERVATIONS]
    pos_norm = F32(10.0) * C.SQRT2

    def expected(self_id, neighbours):
        row = np.zeros(env.obs_dim, F32)
        for slot, j in enumerate(neighbours):
            row[0 * 2 + slot] = _rel(pos[j][0], pos[self_id][0], pos_norm)
            row[1 * 2 + slot] = _rel(pos[j][1], pos[self_id][1], pos_norm)
            row[4 * 2 + slot] = _rel(j, self_id, C.TWO_PI)  # direction = agent id here
            row[5 * 2 + slot] = env.agent_types[j]
            row[6 * 2 + slot] = 1.0
        row[-1] = F32(1) / F32(10)
        return row

    np.testing.assert_array_equal(obs[0, 0], expected(0, [1, 2]))  # 1 and 2 tie at distance 1
    np.testing.assert_array_equal(obs[1, 0], expected(0, [2, 3]))  # 1 out -> next is 3
    np.testing.assert_array_equal(obs[0, 4], expected(4, [3, 1]))  # d2: 3 -> 20, 1 -> 25
    np.testing.assert_array_equal(obs[1, 1], np.zeros(env.obs_dim))  # out of the game: zeros


def test_partial_observation_pads_missing_neighbours_with_zeros():
    env = make_env(num_taggers=1, num_runners=3, use_full_observation=False, num_other_agents_observed=3,
                   tagging_distance=0.01)
    data = make_store(env)
    pos = {0: (1.0, 1.0), 1: (2.0, 1.0), 2: (3.0, 1.0), 3: (4.0, 1.0)}
    place(data, 0, pos)
    data["still_in_the_game"][0, [2, 3]] = 0
    step(env, data)
    row = data[Constants.OBSERVATIONS][0, 0]
    present = np.zeros((7, 3), bool)
    present[:, 0] = True
    np.testing.assert_array_equal(row[:-1].reshape(7, 3)[~present], 0.0)
    assert row[6 * 3 + 0] == 1.0 and row[-1] == F32(0.1)


def test_full_observation_layout():
    env = make_env(num_taggers=1, num_runners=2, use_full_observation=True)
    data = make_store(env)
    assert env.obs_dim == 7 * 2 + 1
    pos = {0: (1.0, 2.0), 1: (4.0, 6.0), 2: (9.0, 3.0)}
    place(data, 0, pos)
    place(data, 1, pos)
    data["direction"][:, :] = F32([0.5, 1.5, 2.5])
    data["still_in_the_game"][1, 2] = 0
    step(env, data)
    obs = data[Constants.OBSERVATIONS]
    pos_norm = F32(10.0) * C.SQRT2
    for e in range(2):
        dirs = F32([0.5, 1.5, 2.5]) * (data["still_in_the_game"][e] != 0)  # out of the game: direction 0
        for i in range(3):
            others = [j for j in range(3) if j != i]
            in_game = data["still_in_the_game"][e]
            row = obs[e, i]
            for s, j in enumerate(others):
                rel_ok = in_game[i] == 1
                assert row[0 * 2 + s] == (_rel(pos[j][0], pos[i][0], pos_norm) if rel_ok else 0)
                assert row[1 * 2 + s] == (_rel(pos[j][1], pos[i][1], pos_norm) if rel_ok else 0)
                assert row[2 * 2 + s] == 0 and row[3 * 2 + s] == 0  # speeds and accelerations are 0
                assert row[4 * 2 + s] == ((dirs[j] - dirs[i]) / C.TWO_PI if rel_ok else 0)
                assert row[5 * 2 + s] == env.agent_types[j]
                assert row[6 * 2 + s] == in_game[j]
            assert row[-1] == (F32(0.1) if in_game[i] else 0)


def test_reset_returns_one_observation_per_agent_at_time_zero():
    env = make_env(use_full_observation=False, num_other_agents_observed=2)
    obs = env.reset()
    assert sorted(obs) == list(range(env.num_agents))
    for o in obs.values():
        assert o.shape == (env.obs_dim,) and o.dtype == np.float32 and o[-1] == 0.0
        assert env.observation_space[0].contains(o)


def test_seed_fixes_taggers_and_start_state():
    a, b = make_env(seed=11, num_runners=8), make_env(seed=11, num_runners=8)
    np.testing.assert_array_equal(a.tagger_ids, b.tagger_ids)
    oa, ob = a.reset(), b.reset()
    np.testing.assert_array_equal(oa[0], ob[0])


def test_cuda_constants_match_python_layout():
    env = make_env(use_full_observation=False, num_other_agents_observed=2)
    consts = env.cuda_constants()
    assert consts["kObsDim"] == env.obs_dim == 15
    assert consts["kNumObservedAgents"] == 2 and consts["kUseFullObservation"] is False
    assert consts["kNumAccelerationActions"] == len(env.acceleration_actions) == 4
    assert np.float32(consts["kTwoPi"]) == C.TWO_PI and np.float32(consts["kSqrt2"]) == C.SQRT2
    assert [consts[k] for k in sorted(C.feature_constants(), key=C.feature_constants().get)] == list(range(7))


# --------------------------------------------------------------------------------- bad configs
@pytest.mark.parametrize(
    "kwargs, key",
    [
        ({"num_taggers": 0}, "num_taggers"),
        ({"num_runners": -2}, "num_runners"),
        ({"tagging_distance": 1.5}, "tagging_distance"),
        ({"tagging_distance": -0.5}, "tagging_distance"),
        ({"episode_length": 0}, "episode_length"),
        ({"use_full_observation": False, "num_other_agents_observed": 11}, "num_other_agents_observed"),
        ({"edge_hit_penalty": 0.5}, "edge_hit_penalty"),
        ({"tag_penalty_for_runner": 1.0}, "tag_penalty_for_runner"),
        ({"step_penalty_for_tagger": 0.1}, "step_penalty_for_tagger"),
        ({"tag_reward_for_tagger": -1.0}, "tag_reward_for_tagger"),
        ({"end_of_game_reward_for_runner": -1.0}, "end_of_game_reward_for_runner"),
        ({"grid_length": 0.0}, "grid_length"),
        ({"grid_length": 1e-45}, "grid_length=1e-45 must be >= 0.01"),  # issue 39: a denormal side was accepted
        ({"grid_length": 1e300}, "grid_length"),
        ({"starting_location_x": [1.0, 2.0]}, "starting_location_x"),
        ({"num_taggerz": 3}, "num_taggerz"),
        ({"neighbour_search": "kdtree"}, "neighbour_search"),
    ],
)
def test_bad_config_raises_config_error_naming_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        TagContinuous(**kwargs)


def test_neighbour_search_mode_suggests_the_right_value():
    with pytest.raises(ConfigError, match="did you mean 'grid'"):
        TagContinuous(neighbour_search="gird")


@pytest.mark.parametrize("agents", [2, 33, 255, 256, 1000, 1024, 5000])
@pytest.mark.parametrize("k", [1, 10, 40])
def test_neighbour_grid_side(agents, k):
    """Auto: grid from 256 agents with partial observation (1 = scan); at most one cell per agent."""
    k = min(k, agents - 1)
    side = C.neighbour_grid_side(agents, False, k, "auto")
    assert side == 1 if agents < C.GRID_MIN_AGENTS else 1 <= side <= C.GRID_MAX_SIDE
    forced = C.neighbour_grid_side(agents, False, k, "grid")
    assert 1 <= forced <= C.GRID_MAX_SIDE and forced * forced <= agents
    assert C.neighbour_grid_side(agents, True, k, "auto") == 1
    assert C.neighbour_grid_side(agents, False, k, "scan") == 1


def test_grid_side_reaches_the_kernel_constants():
    env = make_env(num_taggers=90, num_runners=910, use_full_observation=False, num_other_agents_observed=10)
    assert env.cuda_constants()["kNeighbourGridSide"] == env.neighbour_grid_side == 16
    assert env.cuda_constants()["kGridAgentsPerCell"] == C.grid_agents_per_cell(False, 10) == 11 / 3
    assert make_env(num_taggers=90, num_runners=910, use_full_observation=False, num_other_agents_observed=10,
                    neighbour_search="scan").cuda_constants()["kNeighbourGridSide"] == 1


def test_unknown_keyword_suggests_the_right_name():
    with pytest.raises(ConfigError, match="did you mean 'num_taggers'"):
        TagContinuous(num_taggerz=3)


def test_partial_observation_ties_in_a_stack_keep_id_order():
    """Four agents on one spot, K = 3: the lowest ids win, then the next distance."""
    env = make_env(num_taggers=1, num_runners=5, use_full_observation=False, num_other_agents_observed=3,
                   tagging_distance=0.01)
    data = make_store(env)
    place(data, 0, {0: (5.0, 5.0), 1: (9.0, 9.0), 2: (6.0, 5.0), 3: (6.0, 5.0), 4: (6.0, 5.0), 5: (6.0, 5.0)})
    data["still_in_the_game"][0, 3] = 0
    step(env, data)
    rel_x = data[Constants.OBSERVATIONS][0, 0, 0:3]
    types = data[Constants.OBSERVATIONS][0, 0, 15:18]
    np.testing.assert_array_equal(rel_x, [F32(1.0) / (F32(10.0) * C.SQRT2)] * 3)  # agents 2, 4, 5
    np.testing.assert_array_equal(types, env.agent_types[[2, 4, 5]])
