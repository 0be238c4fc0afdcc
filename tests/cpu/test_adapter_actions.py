"""The interop adapters check actions before the push (issue 26, item 5).

Out-of-range and non-integer Discrete / MultiDiscrete actions and NaN, infinite or out-of-bounds
Box actions are refused with an InvalidActionError that names the adapter, the sub-env or agent,
the bad value and the fix, and leave the env unstepped; ``invalid_actions="clip"`` clips them
instead (Pendulum's reward stays finite). Valid actions give bit-identical results in both modes
and equal the raw push into the data store (what the adapters did before the check existed).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import example_envs  # noqa: F401 - registers the example envs by name
from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError, DataTypeError, InvalidActionError, SpaceMismatchError
from warp_drive.interop import WarpDrivePettingZooEnv, WarpDriveVectorEnv

CARTPOLE = dict(episode_length=20, seed=0)
PENDULUM = dict(episode_length=30, seed=0)
TAG = dict(num_taggers=1, num_runners=2, num_acceleration_levels=3, num_turn_levels=5, episode_length=10, seed=0)


def vec(name, num_envs, config, **kwargs):
    envs = WarpDriveVectorEnv(name, num_envs=num_envs, env_config=config, **kwargs)
    envs.reset(seed=0)
    return envs


def pz(name, config, **kwargs):
    env = WarpDrivePettingZooEnv(name, config, **kwargs)
    env.reset(seed=0)
    return env


def store(adapter, name=Constants.ACTIONS):
    return adapter.data_manager.pull_data_from_device(name).copy()


def refused(adapter, step, actions, *fragments):
    """``step(actions)`` raises InvalidActionError whose message holds every fragment, and neither the
    stored actions nor the env state moved."""
    before = {n: store(adapter, n) for n in (Constants.ACTIONS, Constants.OBSERVATIONS, Constants.TIMESTEP)}
    with pytest.raises(InvalidActionError) as err:
        step(actions)
    msg = str(err.value)
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)
    for name, value in before.items():
        np.testing.assert_array_equal(store(adapter, name), value)
    return msg


def test_the_error_type_is_a_space_mismatch_and_a_config_error():
    assert issubclass(InvalidActionError, SpaceMismatchError) and issubclass(InvalidActionError, ConfigError)


# ----------------------------------------------------------------------------- Discrete
@pytest.mark.parametrize("bad", [7, -1])
def test_vector_discrete_out_of_range(bad):
    envs = vec("cartpole", 4, CARTPOLE)
    for actions in (np.array([0, bad, 1, 0]), torch.tensor([0, bad, 1, 0])):
        msg = refused(envs, envs.step, actions, "WarpDriveVectorEnv", "sub-env 1: " + str(bad), "Discrete(2)",
                      "allowed 0..1", "invalid_actions='clip'")
        assert msg.startswith("WarpDriveVectorEnv: 1 of 4 action values lie outside")


def test_vector_discrete_non_integer():
    envs = vec("cartpole", 4, CARTPOLE)
    refused(envs, envs.step, np.array([0, 1.5, 1, 0]), "sub-env 1: 1.5", "not integers", "pass integers")
    refused(envs, envs.step, torch.tensor([0.0, 1.0, float("nan"), 0.0]), "sub-env 2: nan", "not integers")
    with pytest.raises(DataTypeError, match="cast them"):  # whole-number floats: a dtype error, as before
        envs.step(np.array([0.0, 1.0, 1.0, 0.0]))
    clip = vec("cartpole", 4, CARTPOLE, invalid_actions="clip")
    refused(clip, clip.step, np.array([0, 1.5, 1, 0]), "sub-env 1: 1.5")  # no nearest action: refused in clip mode too


@pytest.mark.parametrize("bad", [7, -1])
def test_pettingzoo_discrete_out_of_range(bad):
    env = pz("tag_gridworld", dict(num_taggers=2, episode_length=10))
    actions = {a: 0 for a in env.agents}
    refused(env, env.step, {**actions, "agent_1": bad}, "WarpDrivePettingZooEnv", f"agent_1: {bad}",
            "Discrete(5)", "allowed 0..4", "invalid_actions='clip'")


def test_pettingzoo_discrete_non_integer():
    env = pz("tag_gridworld", dict(num_taggers=2, episode_length=10))
    actions = {a: 0 for a in env.agents}
    refused(env, env.step, {**actions, "agent_2": 1.5}, "agent_2: 1.5", "not integers")
    refused(env, env.step, {**actions, "agent_0": np.array([np.nan])}, "agent_0: nan", "not integers")


def test_discrete_clip():
    envs = vec("cartpole", 4, CARTPOLE, invalid_actions="clip")
    envs.step(np.array([7, -1, 1, 0]))
    np.testing.assert_array_equal(store(envs)[:, 0, 0], [1, 0, 1, 0])
    env = pz("tag_gridworld", dict(num_taggers=2, episode_length=10), invalid_actions="clip")
    env.step({"agent_0": 9, "agent_1": -3, "agent_2": 2})
    np.testing.assert_array_equal(store(env)[0, :, 0], [4, 0, 2])


# ----------------------------------------------------------------------------- MultiDiscrete
def test_multidiscrete_bounds_are_per_head():
    """MultiDiscrete([4, 6]): 5 is valid for head 1 and invalid for head 0."""
    envs = vec("tag_continuous", 2, TAG, flatten_agents=True)  # 6 sub-envs, 2 heads each
    good = np.zeros((6, 2), np.int64)
    good[:, 1] = 5
    envs.step(good)
    np.testing.assert_array_equal(store(envs).reshape(6, 2), good)
    bad = good.copy()
    bad[4, 0] = 5
    bad[2, 1] = 6
    msg = refused(envs, envs.step, bad, "2 of 12 action values", "sub-env 2 (replica 0, agent 2) head 1: 6 (allowed 0..5)",
                  "sub-env 4 (replica 1, agent 1) head 0: 5 (allowed 0..3)")
    assert msg.index("sub-env 2") < msg.index("sub-env 4")

    env = pz("tag_continuous", TAG)
    actions = {a: np.array([0, 5]) for a in env.agents}
    env.step(actions)
    refused(env, env.step, {**actions, "agent_1": np.array([4, 0])}, "agent_1 head 0: 4 (allowed 0..3)")
    refused(env, env.step, {**actions, "agent_2": np.array([0, -1])}, "agent_2 head 1: -1 (allowed 0..5)")
    clip = pz("tag_continuous", TAG, invalid_actions="clip")
    clip.step({**actions, "agent_1": np.array([4, 9]), "agent_2": np.array([-2, -1])})
    np.testing.assert_array_equal(store(clip)[0], [[0, 5], [3, 5], [0, 0]])


# ----------------------------------------------------------------------------- Box (Pendulum, [-2, 2])
@pytest.mark.parametrize("bad,shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf"), (2.5, "2.5"), (-7.0, "-7"),
                                       (1e300, "inf")])  # float64 1e300 is inf in the store's float32
def test_box_bad_values_are_refused(bad, shown):
    envs = vec("pendulum", 3, PENDULUM)
    actions = np.array([[0.5], [bad], [-2.0]])
    refused(envs, envs.step, actions, "WarpDriveVectorEnv", f"sub-env 1: {shown} (allowed [-2, 2])", "Box(-2.0, 2.0")
    refused(envs, envs.step, torch.as_tensor(actions), f"sub-env 1: {shown}")
    env = pz("pendulum", PENDULUM)
    refused(env, env.step, {"agent_0": np.array([bad])}, "WarpDrivePettingZooEnv", f"agent_0: {shown} (allowed [-2, 2])")


def test_box_clip_keeps_pendulum_finite():
    bad = np.array([[np.nan], [np.inf], [-np.inf], [5.0], [-3.0], [1.25]])
    envs = vec("pendulum", 6, PENDULUM, invalid_actions="clip")
    for _ in range(40):  # past the end of an episode (autoreset)
        obs, rewards, *_ = envs.step(bad)
        assert torch.isfinite(rewards).all() and torch.isfinite(obs).all()
    np.testing.assert_array_equal(store(envs)[:, 0, 0], np.float32([0.0, 2.0, -2.0, 2.0, -2.0, 1.25]))
    env = pz("pendulum", PENDULUM, invalid_actions="clip")
    for value in (np.nan, np.inf, -np.inf, 9.0):
        obs, rewards, *_ = env.step({"agent_0": np.array([value])})
        assert np.isfinite(rewards["agent_0"]) and np.isfinite(obs["agent_0"]).all()
    assert store(env)[0, 0, 0] == np.float32(2.0)


def test_unbounded_box_still_refuses_non_finite_values():
    from warp_drive.interop._actions import ActionChecker
    from gymnasium import spaces

    checker = ActionChecker(spaces.Box(-np.inf, np.inf, (2,), np.float32), "raise", "Adapter", torch.float32)
    x = torch.tensor([[1e30, -1e30], [0.0, float("inf")]])
    with pytest.raises(InvalidActionError, match=r"row 1 dim 1: inf \(allowed \[-inf, inf\]\)"):
        checker(x, lambda i: f"row {i}")
    assert torch.equal(checker(x[:1], str), x[:1])


# ----------------------------------------------------------------------------- messages, options
def test_the_message_is_bounded():
    envs = vec("cartpole", 1000, CARTPOLE)
    msg = refused(envs, envs.step, np.full(1000, 123456789), "1000 of 1000 action values", "sub-env 4: 123456789", "; ...")
    assert "sub-env 5:" not in msg and len(msg) < 600


def test_an_unknown_option_is_refused_before_anything_is_built():
    for make in (lambda: WarpDriveVectorEnv("cartpole", num_envs=2, invalid_actions="warn"),
                 lambda: WarpDrivePettingZooEnv("cartpole", invalid_actions=None)):
        with pytest.raises(ConfigError, match="invalid_actions=.* is unknown; use 'raise'.*or 'clip'"):
            make()


# ----------------------------------------------------------------------------- valid actions unchanged
def _raw_vector_run(name, num_envs, config, actions):
    """The pre-check push: the actions written straight into the store, then step and same-step reset."""
    envs = vec(name, num_envs, config)
    target = envs.data_manager.data_on_device_via_torch(Constants.ACTIONS)
    out = []
    for a in actions:
        target.copy_(torch.as_tensor(a).to(target.dtype).reshape(target.shape))
        envs.wrapper.step_all_envs()
        rewards = envs.data_manager.data_on_device_via_torch(Constants.REWARDS).clone()
        envs.wrapper.reset_only_done_envs()
        out.append((store(envs, Constants.OBSERVATIONS), rewards.numpy()))
    return out


@pytest.mark.parametrize("name,config,draw", [
    ("cartpole", CARTPOLE, lambda rng: rng.integers(0, 2, 8)),
    ("pendulum", PENDULUM, lambda rng: np.clip(rng.normal(0, 1.5, (8, 1)), -2, 2)),  # float64, bounds included
])
def test_valid_actions_are_pushed_bit_for_bit(name, config, draw):
    rng = np.random.default_rng(3)
    actions = [draw(rng) for _ in range(45)]
    actions[0] = np.full_like(actions[0], -2 if name == "pendulum" else 0)  # the bounds themselves are valid
    actions[1] = np.full_like(actions[1], 2 if name == "pendulum" else 1)
    raw = _raw_vector_run(name, 8, config, actions)
    for mode in ("raise", "clip"):
        envs = vec(name, 8, config, invalid_actions=mode)
        for a, (obs_raw, rew_raw) in zip(actions, raw):
            obs, rewards, *_ = envs.step(a if mode == "raise" else torch.as_tensor(a))
            np.testing.assert_array_equal(obs.numpy(), obs_raw[:, 0])
            np.testing.assert_array_equal(rewards.numpy(), rew_raw[:, 0])


def test_valid_pettingzoo_actions_are_pushed_bit_for_bit():
    rng = np.random.default_rng(4)
    actions = [{"agent_0": np.clip(rng.normal(0, 1.5, 1), -2, 2)} for _ in range(25)]
    runs = []
    for mode in ("raise", "clip", None):
        env = pz("pendulum", PENDULUM, **({} if mode is None else {"invalid_actions": mode}))
        trace = []
        for a in actions:
            if mode is None:  # the raw push
                env.data_manager.assign(Constants.ACTIONS, a["agent_0"].astype(np.float32).reshape(1, 1, 1))
                env.wrapper.step_all_envs()
                trace.append((store(env, Constants.OBSERVATIONS)[0, 0], store(env, Constants.REWARDS)[0, 0]))
            else:
                obs, rew, *_ = env.step(a)
                trace.append((obs["agent_0"], np.float32(rew["agent_0"])))
        runs.append(trace)
    for trace in runs[1:]:
        for (o, r), (o0, r0) in zip(trace, runs[0]):
            np.testing.assert_array_equal(o, o0)
            assert r == r0
