"""WarpDrivePettingZooEnv on the cpu backend: PettingZoo's own API and seed tests, values against the
data store, terminations/truncations, agents leaving early, seeding and input checks."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from pettingzoo.utils.conversions import parallel_to_aec

from example_envs import example_env_names, get_example_env_class  # importing example_envs registers the envs by name
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.interop import InteropError, WarpDrivePettingZooEnv
from warp_drive.utils.constants import Constants

TAG_CONTINUOUS = dict(
    num_taggers=2, num_runners=3, grid_length=5.0, episode_length=30, seed=1, tagging_distance=0.2,
    num_acceleration_levels=3, num_turn_levels=3,
)
TAG_GRIDWORLD = dict(num_taggers=3, grid_length=4, episode_length=20)
CARTPOLE = dict(episode_length=50, seed=0)
CONFIGS = {"tag_continuous": TAG_CONTINUOUS, "tag_gridworld": TAG_GRIDWORLD, "cartpole": CARTPOLE}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_parallel_api_test_passes_without_warnings(name):
    env = WarpDrivePettingZooEnv(name, CONFIGS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Live agent was not given ..." etc. would fail the test
        parallel_api_test(env, num_cycles=100)  # > episode_length: episodes end and agents empty


@pytest.mark.parametrize("name", list(CONFIGS))
def test_parallel_seed_test_passes(name):
    parallel_seed_test(lambda: WarpDrivePettingZooEnv(name, CONFIGS[name]), num_cycles=60)


#: Every example env without an env seed (small sizes), plus the reset-pool variants of classic control.
UNSEEDED = {
    **{name: {} for name in example_env_names() if name not in ("tag_continuous", "tag_gridworld", "tag_gridworld_with_reset_pool")},
    "tag_continuous": dict(num_taggers=2, num_runners=4, episode_length=30, tagging_distance=0.2),
    "tag_gridworld": dict(num_taggers=3, grid_length=4, episode_length=20),
    "tag_gridworld_with_reset_pool": dict(num_taggers=3, grid_length=4, episode_length=20, reset_pool_size=8),
    "cartpole-pool": dict(reset_pool_size=8, episode_length=40),
    "pendulum-pool": dict(reset_pool_size=8, episode_length=40),
}


@pytest.mark.parametrize("key", list(UNSEEDED))
def test_parallel_seed_test_passes_without_an_env_seed(key):
    """reset(seed=...) re-seeds everything random: start states, TagContinuous's roles, reset pools."""
    name = key.split("-")[0]
    assert "seed" not in UNSEEDED[key]
    parallel_seed_test(lambda: WarpDrivePettingZooEnv(name, UNSEEDED[key]), num_cycles=40)


def test_every_example_env_is_in_the_unseeded_seed_test():
    assert set(example_env_names()) <= set(UNSEEDED)


def test_reset_seed_redraws_tag_roles_like_a_fresh_env():
    config = dict(num_taggers=2, num_runners=6, episode_length=10)
    env = WarpDrivePettingZooEnv("tag_continuous", config)
    tag = get_example_env_class("tag_continuous")
    for seed in (0, 1, 2, 5):
        obs, _ = env.reset(seed=seed)
        fresh = tag(**config, seed=seed)
        fresh_obs = fresh.reset()
        np.testing.assert_array_equal(env.env.tagger_ids, fresh.tagger_ids)
        np.testing.assert_array_equal(env.data_manager.pull_data_from_device("agent_types"), fresh.agent_types)
        np.testing.assert_array_equal(env.data_manager.pull_data_from_device("tagger_ids"), fresh.tagger_ids)
        for k, agent in enumerate(env.possible_agents):
            np.testing.assert_array_equal(obs[agent], fresh_obs[k])
    assert len({tuple(tag(**config, seed=s).tagger_ids) for s in range(6)}) > 1  # the roles do move


def test_reset_seed_redraws_reset_pools_like_a_fresh_env():
    config = dict(num_taggers=2, grid_length=6, episode_length=5, reset_pool_size=4)
    env = WarpDrivePettingZooEnv("tag_gridworld_with_reset_pool", config)
    env.reset(seed=3)
    fresh = get_example_env_class("tag_gridworld_with_reset_pool")(**config, seed=3)
    np.testing.assert_array_equal(env.data_manager.pull_data_from_device("loc_x_reset_pool"), fresh.pool_x)
    np.testing.assert_array_equal(env.data_manager.pull_data_from_device("loc_y_reset_pool"), fresh.pool_y)
    cart = WarpDrivePettingZooEnv("cartpole", dict(reset_pool_size=4))
    cart.reset(seed=8)
    states, _ = get_example_env_class("cartpole")(reset_pool_size=4, seed=8).reset_pool()
    np.testing.assert_array_equal(cart.data_manager.pull_data_from_device("state_reset_pool"), states)


@pytest.mark.filterwarnings("ignore::UserWarning:pettingzoo.test.api_test")  # about the envs' spaces
@pytest.mark.parametrize("name", list(CONFIGS))
def test_aec_api_test_passes_through_parallel_to_aec(name):
    api_test(parallel_to_aec(WarpDrivePettingZooEnv(name, CONFIGS[name])), num_cycles=60)


def test_agents_spaces_and_metadata():
    env = WarpDrivePettingZooEnv("tag_gridworld", TAG_GRIDWORLD)
    assert env.possible_agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert env.agents == []  # before reset
    assert env.metadata["is_parallelizable"] is True and env.metadata["name"] == "warp_drive_TagGridWorld"
    inner = env.env
    for k, agent in enumerate(env.possible_agents):
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.observation_space(agent) == inner.observation_space[k]
        assert env.action_space(agent) == inner.action_space[k]
    # per-agent objects (seeding one agent's space does not move another's)
    assert env.action_space("agent_0") is not env.action_space("agent_1")
    with pytest.raises(ConfigError, match="unknown agent"):
        env.action_space("runner")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_obs_and_rewards_equal_the_data_store(name):
    env = WarpDrivePettingZooEnv(name, CONFIGS[name])
    dm = env.data_manager
    obs, infos = env.reset(seed=3)
    store = dm.pull_data_from_device(Constants.OBSERVATIONS)[0]
    for k, agent in enumerate(env.possible_agents):
        np.testing.assert_array_equal(obs[agent], store[k])
        assert obs[agent].dtype == np.float32 and infos[agent] == {}
    for _ in range(10):
        if not env.agents:
            break
        actions = {a: env.action_space(a).sample() for a in env.agents}
        live = list(env.agents)
        obs, rewards, terms, truncs, infos = env.step(actions)
        assert set(obs) == set(rewards) == set(terms) == set(truncs) == set(infos) == set(live)
        store_obs = dm.pull_data_from_device(Constants.OBSERVATIONS)[0]
        store_rew = dm.pull_data_from_device(Constants.REWARDS)[0]
        for agent in live:
            k = env.possible_agents.index(agent)
            np.testing.assert_array_equal(obs[agent], store_obs[k])
            assert rewards[agent] == float(store_rew[k])
            assert isinstance(rewards[agent], float)
        # the actions landed in the store, in agent order
        acts = dm.pull_data_from_device(Constants.ACTIONS)[0]
        for agent in live:
            k = env.possible_agents.index(agent)
            np.testing.assert_array_equal(acts[k], np.asarray(actions[agent]).reshape(-1))


def test_obs_stay_in_the_observation_space_tag_gridworld():
    env = WarpDrivePettingZooEnv("tag_gridworld", TAG_GRIDWORLD)
    obs, _ = env.reset(seed=0)
    while env.agents:
        for agent, o in obs.items():
            assert env.observation_space(agent).contains(o)
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})


def test_time_limit_is_a_truncation_for_every_agent():
    # taggers at (2, 2), runner at (0, 0); everyone stays (action 0): no tag, the clock runs out
    env = WarpDrivePettingZooEnv("tag_gridworld", dict(num_taggers=2, grid_length=4, episode_length=5))
    env.reset()
    for t in range(1, 6):
        _, _, terms, truncs, _ = env.step({a: 0 for a in env.agents})
        if t < 5:
            assert not any(terms.values()) and not any(truncs.values())
            assert env.agents == env.possible_agents
    assert all(truncs.values()) and not any(terms.values())
    assert set(truncs) == set(env.possible_agents)
    assert env.agents == []
    assert int(env.data_manager.pull_data_from_device(Constants.TIMESTEP)[0]) == 5
    with pytest.raises(InteropError, match="reset"):
        env.step({})
    env.reset()
    assert env.agents == env.possible_agents


def test_tag_before_the_time_limit_is_a_termination_for_every_agent():
    # grid 2: taggers start at (1, 1), runner at (0, 0); tagger 0 moves left then down onto it
    env = WarpDrivePettingZooEnv("tag_gridworld", dict(num_taggers=2, grid_length=2, episode_length=10))
    env.reset()
    _, _, terms, truncs, _ = env.step({"agent_0": 2, "agent_1": 0, "agent_2": 0})  # left
    assert not any(terms.values())
    _, rewards, terms, truncs, _ = env.step({"agent_0": 4, "agent_1": 0, "agent_2": 0})  # down: tag
    assert all(terms.values()) and not any(truncs.values())
    assert rewards["agent_0"] > 0 and rewards["agent_2"] < 0
    assert env.agents == []


def _colocated_tag_continuous(episode_length: int, **adapter_kwargs) -> WarpDrivePettingZooEnv:
    """1 tagger and 2 runners; runner A starts on the tagger (tagged on step 1), runner B far away.

    Every acceleration level is 0 and start speeds are 0, so nobody moves whatever the actions.
    """
    base = dict(num_taggers=1, num_runners=2, grid_length=10.0, episode_length=episode_length, seed=5,
                tagging_distance=0.05, num_acceleration_levels=2, num_turn_levels=2,
                min_acceleration=0.0, max_acceleration=0.0)
    tagger = int(get_example_env_class("tag_continuous")(**base).tagger_ids[0])
    runners = [i for i in range(3) if i != tagger]
    x = np.zeros(3, np.float32)
    y = np.zeros(3, np.float32)
    x[tagger], y[tagger] = 5.0, 5.0
    x[runners[0]], y[runners[0]] = 5.0, 5.0
    x[runners[1]], y[runners[1]] = 0.5, 9.5
    env = WarpDrivePettingZooEnv(
        "tag_continuous", dict(base, starting_location_x=x, starting_location_y=y), **adapter_kwargs
    )
    assert int(env.env.tagger_ids[0]) == tagger
    env._test_ids = (tagger, runners[0], runners[1])
    return env


def test_tagged_runner_leaves_the_game_as_terminated():
    env = _colocated_tag_continuous(episode_length=4)
    tagger, caught, free = (f"agent_{i}" for i in env._test_ids)
    env.reset(seed=0)
    noop = np.zeros(2, np.int64)
    obs, rewards, terms, truncs, _ = env.step({a: noop for a in env.agents})
    assert set(terms) == {tagger, caught, free}
    assert terms[caught] and not truncs[caught]
    assert not terms[tagger] and not terms[free]
    assert rewards[caught] < 0 and rewards[tagger] > 0
    assert env.agents == [a for a in env.possible_agents if a != caught]
    still = env.data_manager.pull_data_from_device("still_in_the_game")[0]
    assert still[env._test_ids[1]] == 0

    # later steps neither expect nor report the runner that left
    obs, rewards, terms, truncs, _ = env.step({a: noop for a in env.agents})
    assert caught not in obs and caught not in terms
    env.step({a: noop for a in env.agents})
    obs, rewards, terms, truncs, _ = env.step({a: noop for a in env.agents})  # t = 4 = T
    assert set(truncs) == {tagger, free}
    assert all(truncs.values()) and not any(terms.values())
    assert env.agents == []


def test_parallel_api_test_covers_an_agent_leaving_early():
    env = _colocated_tag_continuous(episode_length=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(env, num_cycles=20)


def test_active_flag_can_be_disabled():
    env = _colocated_tag_continuous(episode_length=3, active_flag=None)
    env.reset()
    _, _, terms, _, _ = env.step({a: np.zeros(2, np.int64) for a in env.agents})
    caught = env._test_ids[1]
    assert env.data_manager.pull_data_from_device("still_in_the_game")[0, caught] == 0
    assert not any(terms.values()) and env.agents == env.possible_agents  # the flag is not read
    with pytest.raises(ConfigError, match="active_flag"):
        WarpDrivePettingZooEnv("tag_gridworld", TAG_GRIDWORLD, active_flag="no_such_array")


def test_reset_seed_reproduces_gymnasium_cartpole_initial_state():
    env = WarpDrivePettingZooEnv("cartpole", CARTPOLE)
    for seed in (0, 7, 123):
        obs, _ = env.reset(seed=seed)
        expected, _ = gym.make("CartPole-v1").reset(seed=seed)
        np.testing.assert_array_equal(obs["agent_0"], expected.astype(np.float32))


def test_reset_seed_is_reproducible_and_unseeded_reset_continues_the_stream():
    env = WarpDrivePettingZooEnv("tag_continuous", TAG_CONTINUOUS)
    first, _ = env.reset(seed=11)
    again, _ = env.reset(seed=11)
    for agent in env.possible_agents:
        np.testing.assert_array_equal(first[agent], again[agent])
    other, _ = env.reset(seed=12)
    assert any(not np.array_equal(first[a], other[a]) for a in env.possible_agents)
    nxt, _ = env.reset()  # new draw from the re-seeded stream
    assert any(not np.array_equal(other[a], nxt[a]) for a in env.possible_agents)
    # the action spaces are seeded too: same seed, same samples
    env.reset(seed=4)
    s1 = [env.action_space(a).sample() for a in env.possible_agents]
    env.reset(seed=4)
    s2 = [env.action_space(a).sample() for a in env.possible_agents]
    for a, b in zip(s1, s2):
        np.testing.assert_array_equal(a, b)


def test_redraw_false_restores_the_saved_start_on_the_device():
    env = WarpDrivePettingZooEnv("cartpole", CARTPOLE, redraw_start_states=False)
    first, _ = env.reset(seed=2)
    for _ in range(3):
        env.step({"agent_0": 1})
    again, _ = env.reset()
    np.testing.assert_array_equal(first["agent_0"], again["agent_0"])


def test_episodes_after_reset_step_identically():
    env = WarpDrivePettingZooEnv("cartpole", CARTPOLE, redraw_start_states=False)
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=9)
        traj = [obs["agent_0"]]
        for t in range(8):
            obs, *_ = env.step({"agent_0": t % 2})
            traj.append(obs["agent_0"])
        runs.append(np.stack(traj))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_bad_actions_are_refused():
    env = WarpDrivePettingZooEnv("tag_gridworld", TAG_GRIDWORLD)
    with pytest.raises(InteropError, match="reset"):
        env.step({a: 0 for a in env.possible_agents})
    env.reset()
    with pytest.raises(ConfigError, match="no action for live agents"):
        env.step({"agent_0": 0})
    with pytest.raises(ConfigError, match="unknown agent"):
        env.step({**{a: 0 for a in env.agents}, "agent_99": 0})
    with pytest.raises(ConfigError, match=r"agent_0: 7 \(allowed 0..4\)"):  # InvalidActionError is a ConfigError
        env.step({**{a: 0 for a in env.agents}, "agent_0": 7})
    with pytest.raises(ConfigError, match="integer"):
        env.step({**{a: 0 for a in env.agents}, "agent_0": 1.5})
    with pytest.raises(ConfigError, match="dict"):
        env.step([0, 0, 0, 0])
    env.step({a: np.int64(1) for a in env.agents})  # numpy ints are fine


def test_box_actions_pendulum():
    env = WarpDrivePettingZooEnv("pendulum", dict(episode_length=3, seed=0))
    env.reset(seed=0)
    env.step({"agent_0": np.array([1.5], np.float64)})
    np.testing.assert_allclose(env.data_manager.pull_data_from_device(Constants.ACTIONS)[0, 0], [1.5])
    with pytest.raises(ConfigError, match=r"agent_0: 5 \(allowed \[-2, 2\]\)"):
        env.step({"agent_0": np.array([5.0])})
    env.step({"agent_0": np.array([0.0], np.float32)})
    *_, truncs, _ = env.step({"agent_0": np.array([0.0], np.float32)})
    assert truncs == {"agent_0": True}


def test_construction_from_instance_and_env_wrapper():
    inst = get_example_env_class("tag_gridworld")(**TAG_GRIDWORLD)
    env = WarpDrivePettingZooEnv(inst)
    assert env.env is inst and env.backend == "cpu"
    wrapper = EnvWrapper(get_example_env_class("cartpole")(**CARTPOLE), num_envs=1, env_backend="cpu")
    env = WarpDrivePettingZooEnv(wrapper)
    assert env.wrapper is wrapper
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="one replica"):
        WarpDrivePettingZooEnv(EnvWrapper(get_example_env_class("cartpole")(**CARTPOLE), num_envs=2))
    with pytest.raises(ConfigError, match="env_config"):
        WarpDrivePettingZooEnv(get_example_env_class("cartpole")(), {"episode_length": 3})
    with pytest.raises(ConfigError, match="no env named 'no_such_env'"):
        WarpDrivePettingZooEnv("no_such_env")
    with pytest.raises(ConfigError, match="render_mode"):
        WarpDrivePettingZooEnv("cartpole", CARTPOLE, render_mode="human")


def test_render_and_close():
    env = WarpDrivePettingZooEnv("tag_gridworld", TAG_GRIDWORLD, render_mode="ansi")
    env.reset()
    env.step({a: 0 for a in env.agents})
    text = env.render()
    assert "t=1/20" in text and "agent_3" in text
    assert WarpDrivePettingZooEnv("cartpole", CARTPOLE).render() is None
    env.close()
    assert env.agents == []
    with pytest.raises(InteropError, match="closed"):
        env.reset()
