"""NumPy steps of the classic-control envs against gymnasium's own envs.

E = 6 replicas are stepped with ``numpy_step`` on a host data store laid out like the wrapper's
(state (E, 1, d), observations (E, 1, o), sampled_actions (E, 1, 1), rewards (E, 1), _done_ (E,),
_timestep_ (E,), meta episode_length), next to E gymnasium envs (``env.unwrapped``) stepped with
the same actions for 300 steps. Every step starts from the same state: after each step the
gymnasium state is set to the stored float32 state (which equals gymnasium's own result rounded
to float32 storage; compared first). Done envs are reset from the env's reset pool and the
gymnasium env is re-synchronised to the drawn state.

Tolerances (NumPy step vs gymnasium, same float32 state and action):
  state, observation: |diff| <= 1e-6 + 1e-6 |gym| (float32 rounding of float64 results that
      agree to a few float64 ulps), and >= 99% of values bit-identical (100% on x86-64/glibc);
  reward: |diff| <= 1e-5 max(1, |gym|) against float32(gym reward);
  terminated, truncation and the done code: exact.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from example_envs.classic_control import (
    ClassicControlAcrobotEnv,
    ClassicControlCartPoleEnv,
    ClassicControlContinuousMountainCarEnv,
    ClassicControlMountainCarEnv,
    ClassicControlPendulumEnv,
)
from warp_drive.utils.constants import Constants

NUM_ENVS = 6
NUM_STEPS = 300
OBS_RTOL = OBS_ATOL = 1e-6
REWARD_TOL = 1e-5
MIN_BIT_IDENTICAL = 0.99


def _random_discrete(n):
    return lambda rng, state: rng.integers(0, n, state.shape[0])


def _pump(rng, state, velocity_index, low, high, noise=0.2):
    """Push in the direction of motion (swings up / climbs out), with some random actions."""
    action = np.where(state[:, velocity_index] > 0, high, low)
    random = rng.random(state.shape[0]) < noise
    return np.where(random, rng.integers(low, high + 1, state.shape[0]), action)


SPECS = {
    "cartpole": dict(
        cls=ClassicControlCartPoleEnv,
        gym_id="CartPole-v1",
        episode_length=40,
        policy=_random_discrete(2),
        gym_obs=lambda g: np.array(g.state, dtype=np.float32),
    ),
    "acrobot": dict(
        cls=ClassicControlAcrobotEnv,
        gym_id="Acrobot-v1",
        episode_length=90,
        policy=lambda rng, s: _pump(rng, s, 3, 0, 2),  # torque along dtheta2: swings up in ~75 steps
        gym_obs=lambda g: g._get_ob(),
    ),
    "mountain_car": dict(
        cls=ClassicControlMountainCarEnv,
        gym_id="MountainCar-v0",
        episode_length=150,
        policy=lambda rng, s: _pump(rng, s, 1, 0, 2),
        gym_obs=lambda g: np.array(g.state, dtype=np.float32),
    ),
    "continuous_mountain_car": dict(
        cls=ClassicControlContinuousMountainCarEnv,
        gym_id="MountainCarContinuous-v0",
        episode_length=80,
        # magnitudes up to 1.5 exercise the force clipping (the reward uses the unclipped action)
        policy=lambda rng, s: np.where(s[:, 1] > 0, 1.0, -1.0) * rng.uniform(0.3, 1.5, s.shape[0]),
        gym_obs=lambda g: np.array(g.state, dtype=np.float32),
        gym_state_dtype=np.float32,  # gymnasium keeps this env's state in float32
    ),
    "pendulum": dict(
        cls=ClassicControlPendulumEnv,
        gym_id="Pendulum-v1",
        episode_length=100,
        policy=lambda rng, s: rng.uniform(-3.0, 3.0, s.shape[0]),  # beyond +/-2: clipping
        gym_obs=lambda g: g._get_obs(),
    ),
}


def make_host_data(env, num_envs: int) -> dict:
    """A host data store shaped like the EnvWrapper's (cpu backend view)."""
    space = env.action_space[0]
    discrete = isinstance(space, gym.spaces.Discrete)
    return {
        "state": np.zeros((num_envs, 1, env.STATE_DIM), np.float32),
        Constants.OBSERVATIONS: np.zeros((num_envs, 1, env.OBS_DIM), np.float32),
        Constants.ACTIONS: np.zeros((num_envs, 1, 1), np.int32 if discrete else np.float32),
        Constants.REWARDS: np.zeros((num_envs, 1), np.float32),
        Constants.DONE: np.zeros(num_envs, np.int32),
        Constants.TRUNCATED: np.zeros(num_envs, np.int32),
        Constants.TIMESTEP: np.zeros(num_envs, np.int32),
        "episode_length": np.int32(env.episode_length),
        "n_agents": np.int32(1),
        "n_envs": np.int32(num_envs),
    }


def _gym_action(space, a):
    return int(a) if isinstance(space, gym.spaces.Discrete) else np.array([a], dtype=np.float32)


@pytest.mark.parametrize("key", sorted(SPECS))
def test_classic_numpy_step_matches_gymnasium(key):
    spec = SPECS[key]
    env = spec["cls"](episode_length=spec["episode_length"], reset_pool_size=256, seed=11)
    env.reset()
    pool_states, pool_obs = env.reset_pool()
    space = env.action_space[0]
    gym_dtype = spec.get("gym_state_dtype", np.float64)
    gyms = [gym.make(spec["gym_id"]).unwrapped for _ in range(NUM_ENVS)]
    data = make_host_data(env, NUM_ENVS)
    rng = np.random.default_rng(5)

    def reset_env(e: int) -> None:
        row = rng.integers(len(pool_states))
        data["state"][e] = pool_states[row]
        data[Constants.OBSERVATIONS][e] = pool_obs[row]
        data[Constants.DONE][e] = 0
        data[Constants.TIMESTEP][e] = 0
        gyms[e].reset(seed=int(rng.integers(2**31)))
        gyms[e].state = pool_states[row, 0].astype(gym_dtype)
        np.testing.assert_allclose(pool_obs[row, 0], spec["gym_obs"](gyms[e]), rtol=OBS_RTOL, atol=OBS_ATOL)

    for e in range(NUM_ENVS):
        reset_env(e)
    exact = total = terminations = truncations = 0
    for step in range(NUM_STEPS):
        actions = spec["policy"](rng, data["state"][:, 0, :])
        data[Constants.ACTIONS][:, 0, 0] = actions
        env.numpy_step(data)
        for e in range(NUM_ENVS):
            where = f"{key} step {step} env {e}"
            obs, reward, terminated, _, _ = gyms[e].step(_gym_action(space, data[Constants.ACTIONS][e, 0, 0]))
            ours_obs = data[Constants.OBSERVATIONS][e, 0]
            ours_state = data["state"][e, 0]
            gym_state = np.asarray(gyms[e].state, dtype=np.float32)
            np.testing.assert_allclose(ours_obs, obs, rtol=OBS_RTOL, atol=OBS_ATOL, err_msg=where)
            np.testing.assert_allclose(ours_state, gym_state, rtol=OBS_RTOL, atol=OBS_ATOL, err_msg=where)
            exact += int(np.sum(ours_obs == obs) + np.sum(ours_state == gym_state))
            total += ours_obs.size + ours_state.size
            r = float(np.float32(reward))
            assert abs(data[Constants.REWARDS][e, 0] - r) <= REWARD_TOL * max(1.0, abs(r)), where
            t = data[Constants.TIMESTEP][e]
            expected_done = env.TERMINAL_DONE_VALUE if terminated else int(t >= env.episode_length)
            assert data[Constants.DONE][e] == expected_done, where
            assert data[Constants.TRUNCATED][e] == int(not terminated and t >= env.episode_length), where
            terminations += bool(terminated)
            truncations += bool(not terminated and t >= env.episode_length)
            gyms[e].state = ours_state.astype(gym_dtype)  # same state for the next step
            if data[Constants.DONE][e]:
                reset_env(e)
    assert exact / total >= MIN_BIT_IDENTICAL, f"{key}: only {exact}/{total} values bit-identical"
    assert truncations > 0, f"{key}: the run never reached the time limit"
    if key != "pendulum":  # Pendulum never terminates
        assert terminations > 0, f"{key}: the run never terminated"


# ----------------------------------------------------------------------------- goal at time limit
GOAL_CASES = [
    (ClassicControlMountainCarEnv, "MountainCar-v0", [0.49, 0.02], 2),
    (ClassicControlContinuousMountainCarEnv, "MountainCarContinuous-v0", [0.44, 0.02], 1.0),
]


@pytest.mark.parametrize("cls, gym_id, goal_state, action", GOAL_CASES, ids=["discrete", "continuous"])
@pytest.mark.parametrize("timestep_before", [3, 9], ids=["before_limit", "at_limit"])
def test_mountain_car_goal_reports_done_2_even_at_time_limit(
    cls, gym_id, goal_state, action, timestep_before
):
    """Reference defect 21: success coinciding with the time limit must still report 2."""
    T = 10
    env = cls(episode_length=T)
    data = make_host_data(env, 2)
    data["state"][:, 0, :] = [goal_state, [-0.5, 0.0]]  # env 0 reaches the goal, env 1 does not
    data[Constants.TIMESTEP][:] = timestep_before
    data[Constants.ACTIONS][:, 0, 0] = action
    env.numpy_step(data)
    at_limit = timestep_before + 1 >= T
    assert data[Constants.DONE].tolist() == [2, 1 if at_limit else 0]
    assert data[Constants.TRUNCATED].tolist() == [0, int(at_limit)]  # the goal is a termination, even at the limit
    g = gym.make(gym_id).unwrapped
    g.reset(seed=0)
    g.state = np.array(
        goal_state, dtype=np.float32 if cls is ClassicControlContinuousMountainCarEnv else np.float64
    )
    _, reward, terminated, _, _ = g.step(_gym_action(env.action_space[0], action))
    assert terminated
    assert data[Constants.REWARDS][0, 0] == np.float32(reward)
