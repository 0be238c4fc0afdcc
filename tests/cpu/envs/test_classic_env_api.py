"""Classic-control envs: names, kernel signatures, spaces, resets, data layout, constants, configs.

Physics overrides are checked against gymnasium envs given the same settings (one step from
4000 random states; same tolerances as test_classic_gymnasium_parity.py). Bad constructor
values raise ConfigError.
"""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from example_envs.classic_control import (
    CLASSIC_CONTROL_ENVS,
    ClassicControlAcrobotEnv,
    ClassicControlCartPoleEnv,
    ClassicControlContinuousMountainCarEnv,
    ClassicControlMountainCarEnv,
    ClassicControlPendulumEnv,
)
from example_envs.classic_control.base import split_double
from warp_drive.config import check_env_kwargs, load_run_config
from warp_drive.cuda.compiler import render_prelude
from warp_drive.cuda.signature import parse_kernel_signatures
from warp_drive.errors import ConfigError
from warp_drive.utils.constants import Constants

GYM_IDS = {
    "ClassicControlCartPoleEnv": "CartPole-v1",
    "ClassicControlAcrobotEnv": "Acrobot-v1",
    "ClassicControlMountainCarEnv": "MountainCar-v0",
    "ClassicControlContinuousMountainCarEnv": "MountainCarContinuous-v0",
    "ClassicControlPendulumEnv": "Pendulum-v1",
}
NAMES = sorted(CLASSIC_CONTROL_ENVS)
CONTINUOUS = {"ClassicControlContinuousMountainCarEnv", "ClassicControlPendulumEnv"}


def _normalize(name: str) -> str:
    return name.removesuffix("_arr").strip("_").lower()


@pytest.mark.parametrize("name", NAMES)
def test_classic_env_name_and_kernel_signature(name):
    cls = CLASSIC_CONTROL_ENVS[name]
    env = cls()
    assert cls.__name__ == name == env.name
    assert env.step_function_name == f"Cuda{name}Step"
    assert cls.cuda_source.is_file()
    signatures = parse_kernel_signatures(cls.cuda_source.read_text())
    assert list(signatures) == [env.step_function_name]
    params = signatures[env.step_function_name]
    arg_names = [a if isinstance(a, str) else a[0] for a in env.step_kernel_args]
    assert [_normalize(p.name) for p in params] == [_normalize(a) for a in arg_names]
    kinds = {p.name: (p.is_pointer, p.base_kind) for p in params}
    assert kinds["sampled_actions_arr"] == (True, "float" if name in CONTINUOUS else "int")
    assert not params[-1].is_pointer and params[-1].ctype == "int"
    assert env.num_agents == 1 and set(env.observation_space) == set(env.action_space) == {0}


@pytest.mark.parametrize("name", NAMES)
def test_classic_spaces_match_gymnasium(name):
    env = CLASSIC_CONTROL_ENVS[name]()
    g = gym.make(GYM_IDS[name]).unwrapped
    assert env.observation_space[0] == g.observation_space
    assert env.action_space[0] == g.action_space
    assert type(env.action_space[0]) is type(g.action_space)
    assert env.observation_space[0].shape == (env.OBS_DIM,)


@pytest.mark.parametrize("name", NAMES)
def test_classic_reset_reproduces_gymnasium_seeded_resets(name):
    """reset() k times with seed s == gymnasium reset(seed=s) then k - 1 unseeded resets."""
    env = CLASSIC_CONTROL_ENVS[name](seed=1234)
    g = gym.make(GYM_IDS[name]).unwrapped
    for k in range(4):
        ours = env.reset()[0]
        theirs, _ = g.reset(seed=1234 if k == 0 else None)
        assert ours.dtype == np.float32 and ours.shape == (env.OBS_DIM,)
        np.testing.assert_array_equal(env.state, np.asarray(g.state, dtype=np.float32))
        # Pendulum's gymnasium obs is computed from its float64 state, ours from the float32 one
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_classic_data_dictionary_without_pool(name):
    env = CLASSIC_CONTROL_ENVS[name](seed=3)
    obs = env.reset()[0]
    feed = env.get_data_dictionary()
    assert list(feed) == ["state"]
    state = feed["state"]["data"]
    assert state.shape == (1, env.STATE_DIM) and state.dtype == np.float32
    assert feed["state"]["attributes"]["save_copy_and_apply_at_reset"] is True
    np.testing.assert_array_equal(env.observe(state), obs[None, :])
    assert not env.get_tensor_dictionary() and not env.get_reset_pool_dictionary()


@pytest.mark.parametrize("name", NAMES)
def test_classic_reset_pool_rows_are_aligned_and_seeded(name):
    cls = CLASSIC_CONTROL_ENVS[name]
    env = cls(reset_pool_size=64, seed=3)
    env.reset()
    feed = env.get_data_dictionary()
    assert feed["state"]["attributes"]["save_copy_and_apply_at_reset"] is False
    tensors = env.get_tensor_dictionary()
    assert tensors[Constants.OBSERVATIONS]["data"].shape == (1, env.OBS_DIM)
    pools = env.get_reset_pool_dictionary()
    by_target = {e["attributes"]["reset_target"]: e["data"] for e in pools.values()}
    assert all(e["attributes"]["is_reset_pool"] for e in pools.values())
    states, obs = by_target["state"], by_target[Constants.OBSERVATIONS]
    assert states.shape == (64, 1, env.STATE_DIM) and obs.shape == (64, 1, env.OBS_DIM)
    assert states.dtype == obs.dtype == np.float32
    np.testing.assert_array_equal(env.observe(states[:, 0]), obs[:, 0])
    assert len(np.unique(states[:, 0, 0])) == 64
    # gymnasium's initial-state support
    g = gym.make(GYM_IDS[name]).unwrapped
    lo = np.full(env.STATE_DIM, np.inf)
    hi = -lo
    for seed in range(200):
        g.reset(seed=seed)
        lo = np.minimum(lo, g.state)
        hi = np.maximum(hi, g.state)
    span = np.maximum(hi - lo, 1e-12)
    assert np.all(states[:, 0] >= lo - 0.05 * span) and np.all(states[:, 0] <= hi + 0.05 * span)
    # same seed -> same pool; other seed -> other pool
    again = cls(reset_pool_size=64, seed=3).reset_pool()[0]
    other = cls(reset_pool_size=64, seed=4).reset_pool()[0]
    np.testing.assert_array_equal(again, states)
    assert not np.array_equal(other, states)


@pytest.mark.parametrize("name", NAMES)
def test_classic_cuda_constants_are_exact_and_rendered(name):
    env = CLASSIC_CONTROL_ENVS[name]()
    constants = env.cuda_constants()
    assert constants["kStateDim"] == env.STATE_DIM and constants["kObsDim"] == env.OBS_DIM
    assert constants["kTerminalDoneValue"] == env.TERMINAL_DONE_VALUE
    for key, p in env.PHYSICS.items():
        if p.cuda_name is None or not isinstance(env.params[key], float):
            continue
        parts = [constants[p.cuda_name + s] for s in ("Hi", "Mid", "Lo")]
        assert all(float(np.float32(v)) == v for v in parts)
        assert parts[0] + parts[1] + parts[2] == env.params[key], key
    prelude = render_prelude(16, 1, 1, constants)
    for cname in constants:
        assert f" {cname} = " in prelude or f" {cname}[" in prelude


def test_split_double_is_exact():
    rng = np.random.default_rng(0)
    values = [0.0, -0.0, 0.1, math.pi, 9 * math.pi, 1e-5, 12 * 2 * math.pi / 360, *rng.normal(0, 100, 200)]
    for v in values:
        hi, mid, lo = split_double(v)
        assert hi + mid + lo == v
    with pytest.raises(ConfigError):
        split_double(1e300)


@pytest.mark.parametrize("name", NAMES)
def test_classic_numpy_step_episode_bookkeeping(name):
    env = CLASSIC_CONTROL_ENVS[name](episode_length=3, seed=0)
    env.reset()
    E = 4
    discrete = name not in CONTINUOUS
    data = {
        "state": np.repeat(env.state[None, None, :], E, axis=0),
        Constants.OBSERVATIONS: np.zeros((E, 1, env.OBS_DIM), np.float32),
        Constants.ACTIONS: np.ones((E, 1, 1), np.int32 if discrete else np.float32),
        Constants.REWARDS: np.zeros((E, 1), np.float32),
        Constants.DONE: np.zeros(E, np.int32),
        Constants.TRUNCATED: np.zeros(E, np.int32),
        Constants.TIMESTEP: np.zeros(E, np.int32),
        "episode_length": np.int32(3),
    }
    for t in range(1, 4):
        env.numpy_step(data)
        assert data[Constants.TIMESTEP].tolist() == [t] * E
        assert data[Constants.DONE].tolist() == [int(t == 3)] * E  # no env can terminate this soon
        assert data[Constants.TRUNCATED].tolist() == [int(t == 3)] * E  # so the time limit truncates
    # the observation comes from the float64 state, `observe` from its float32 storage
    np.testing.assert_allclose(
        data[Constants.OBSERVATIONS][:, 0], env.observe(data["state"][:, 0]), atol=1e-6
    )


# ----------------------------------------------------------------------------- physics overrides
OVERRIDES = [
    (
        ClassicControlCartPoleEnv,
        dict(
            sutton_barto_reward=True, kinematics_integrator="semi-implicit euler", force_mag=5.0, gravity=9.0
        ),
        dict(
            kwargs=dict(sutton_barto_reward=True),
            attrs=dict(kinematics_integrator="semi-implicit euler", force_mag=5.0, gravity=9.0),
        ),
    ),
    (
        ClassicControlAcrobotEnv,
        dict(dt=0.1, max_vel_1=3.0, link_mass_2=1.5),
        dict(attrs=dict(dt=0.1, MAX_VEL_1=3.0, LINK_MASS_2=1.5)),
    ),
    (
        ClassicControlMountainCarEnv,
        dict(goal_velocity=0.01, force=0.002, goal_position=0.3),
        dict(kwargs=dict(goal_velocity=0.01), attrs=dict(force=0.002, goal_position=0.3)),
    ),
    (
        ClassicControlContinuousMountainCarEnv,
        dict(goal_velocity=0.01, power=0.002, max_action=0.7, goal_position=0.3),
        dict(kwargs=dict(goal_velocity=0.01), attrs=dict(power=0.002, max_action=0.7, goal_position=0.3)),
    ),
    (
        ClassicControlPendulumEnv,
        dict(g=9.81, max_torque=1.5, dt=0.04),
        dict(kwargs=dict(g=9.81), attrs=dict(max_torque=1.5, dt=0.04)),
    ),
]


@pytest.mark.parametrize("cls, overrides, gym_setup", OVERRIDES, ids=lambda v: getattr(v, "__name__", ""))
def test_classic_physics_overrides_match_gymnasium(cls, overrides, gym_setup):
    env = cls(**overrides)
    g = gym.make(GYM_IDS[cls.__name__], **gym_setup.get("kwargs", {})).unwrapped
    for attr, value in gym_setup["attrs"].items():
        setattr(g, attr, value)
    g.reset(seed=0)
    rng = np.random.default_rng(8)
    n = 4000
    low, high = g.observation_space.low, g.observation_space.high
    if cls is ClassicControlAcrobotEnv:
        states = rng.uniform(-1, 1, (n, 4)) * [np.pi, np.pi, 3.0, 9 * np.pi]
    elif cls is ClassicControlPendulumEnv:
        states = np.stack([rng.uniform(-7, 7, n), rng.uniform(-8, 8, n)], 1)
    else:
        states = rng.uniform(np.maximum(low, -3), np.minimum(high, 3), (n, env.STATE_DIM))
    states = states.astype(np.float32)
    space = env.action_space[0]
    if isinstance(space, gym.spaces.Discrete):
        actions = rng.integers(0, space.n, n).astype(np.int32)
    else:
        actions = rng.uniform(space.low[0] * 1.5, space.high[0] * 1.5, n).astype(np.float32)
    ref = env.transition(states, actions)
    dtype = np.float32 if cls is ClassicControlContinuousMountainCarEnv else np.float64
    for i in range(n):
        g.state = states[i].astype(dtype)
        if cls is ClassicControlCartPoleEnv:
            g.steps_beyond_terminated = None
        action = int(actions[i]) if isinstance(space, gym.spaces.Discrete) else actions[i : i + 1]
        obs, reward, terminated, _, _ = g.step(action)
        np.testing.assert_allclose(ref.obs[i], obs, rtol=1e-6, atol=1e-6, err_msg=f"case {i}")
        assert abs(ref.reward[i] - np.float32(reward)) <= 1e-5 * max(1.0, abs(reward)), f"case {i}"
        assert bool(ref.terminated[i]) == terminated, f"case {i}"


# ----------------------------------------------------------------------------- validation
BAD_ARGS = [
    dict(episode_length=0),
    dict(episode_length=-5),
    dict(episode_length=2.5),
    dict(episode_length=True),
    dict(reset_pool_size=1),
    dict(reset_pool_size=-1),
    dict(reset_pool_size=10.5),  # an integral float (10.0, 1e1) is that integer (issue 39)
    dict(seed=-1),
    dict(seed="seven"),
    dict(env_backend="tpu"),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kwargs", BAD_ARGS, ids=lambda d: "-".join(f"{k}={v}" for k, v in d.items()))
def test_classic_bad_constructor_values_raise_config_error(name, kwargs):
    with pytest.raises(ConfigError):
        CLASSIC_CONTROL_ENVS[name](**kwargs)


BAD_PHYSICS = [
    (ClassicControlCartPoleEnv, dict(gravity=float("nan"))),
    (ClassicControlCartPoleEnv, dict(masspole=0.0)),
    (ClassicControlCartPoleEnv, dict(tau="0.02")),
    (ClassicControlCartPoleEnv, dict(force_mag=True)),
    (ClassicControlCartPoleEnv, dict(kinematics_integrator="rk4")),
    (ClassicControlCartPoleEnv, dict(sutton_barto_reward=1)),
    (ClassicControlAcrobotEnv, dict(dt=-0.1)),
    (ClassicControlAcrobotEnv, dict(max_vel_2=float("inf"))),
    (ClassicControlMountainCarEnv, dict(min_position=0.7)),
    (ClassicControlMountainCarEnv, dict(max_speed=0.0)),
    (ClassicControlMountainCarEnv, dict(force=1e40)),
    (ClassicControlContinuousMountainCarEnv, dict(min_action=1.0)),
    (ClassicControlContinuousMountainCarEnv, dict(power=-1.0)),
    (ClassicControlPendulumEnv, dict(max_torque=-2.0)),
    (ClassicControlPendulumEnv, dict(l=0)),
]


@pytest.mark.parametrize("cls, kwargs", BAD_PHYSICS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_classic_bad_physics_values_raise_config_error(cls, kwargs):
    with pytest.raises(ConfigError):
        cls(**kwargs)


def test_classic_unknown_physics_key_names_the_closest():
    with pytest.raises(ConfigError, match="gravity"):
        ClassicControlCartPoleEnv(gravty=9.8)
    with pytest.raises(ConfigError, match="physics keys"):
        ClassicControlPendulumEnv(friction=0.1)


def test_classic_physics_override_accepts_ints():
    assert ClassicControlPendulumEnv(g=9).params["g"] == 9.0


# ----------------------------------------------------------------------------- run configs
@pytest.mark.parametrize("name", NAMES)
def test_classic_run_config_loads_and_builds_the_env(name):
    cls = CLASSIC_CONTROL_ENVS[name]
    path = Path(cls.cuda_source).with_name("run_config.yaml")
    cfg = load_run_config(path)
    assert cfg.name == name
    assert cfg.trainer.env_backend == "pycuda"
    assert list(cfg.policy) == ["shared"] and cfg.policy["shared"].to_train
    assert cfg.policy["shared"].algorithm in ("A2C", "PPO", "DDPG")
    check_env_kwargs(cls, cfg.env, supplied_by_caller=("env_backend",))
    env = cls(**cfg.env)
    assert env.fresh_start_states  # every env and episode starts from its own gymnasium start state
    assert cfg.trainer.num_iterations(env.episode_length) >= 1


def test_classic_readmes_exist():
    for cls in CLASSIC_CONTROL_ENVS.values():
        text = Path(cls.cuda_source).with_name("README.md").read_text()
        assert cls.__name__ in text and "| index |" in text.lower()
