"""The MPE envs' NumPy steps against the reference implementation, ``mpe2``'s own envs.

E replicas of our env run on the cpu backend (``EnvWrapper``, fresh start states drawn by the
start-state hook); next to each, an ``mpe2`` parallel env whose world is overwritten with that
replica's start state (agent and landmark positions and velocities, the speaker's goal). Both run a
full episode (25 steps, ``max_cycles``) with the same actions; observations (ours padded: the
speaker's 3 values are zero-padded to 11), rewards, done and truncation flags and the time step are
compared after every step, and the observations at the start.

Two modes (our float32 twin vs mpe2's float64 world):

* step-synced: mpe2's world is loaded with our state before every step, so each step starts from
  the same state; actions push the agents into each other (sustained contacts). Tolerance
  ``1e-5 + 1e-5 |mpe2|``; measured at most 1.0e-6 (float32 rounding of one step).
* free-running: loaded once at the start, never again; random actions (contacts happen, but
  briefly). Tolerance ``1e-4 + 1e-4 |mpe2|``; measured at most 8.5e-6 (spread, N = 3) and 1.6e-6
  (speaker-listener) over 25 steps. Sustained deep contacts amplify any difference by about 1.3
  per step (the explicit contact integration of the reference itself), so free-running episodes
  of agents pushed together drift apart by up to ~6e-4 in 25 steps: that is why contacts are
  checked step-synced.

Flags and time steps match exactly. The spread tests check that contacts happened.
"""

from __future__ import annotations

import numpy as np
import pytest

mpe2 = pytest.importorskip("mpe2")
from mpe2 import simple_speaker_listener_v4, simple_spread_v3  # noqa: E402

from example_envs import get_example_env_class  # noqa: E402
from warp_drive.env import Constants  # noqa: E402
from warp_drive.env.env_wrapper import EnvWrapper  # noqa: E402

SYNCED_TOL = 1e-5  # atol = rtol, each step from the same state
FREE_TOL = 1e-4  # atol = rtol, a whole episode from the same start state
NUM_ENVS = 8


def _greedy_towards(pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The discrete action (1-4) that reduces the larger coordinate gap to ``target``."""
    gap = target - pos
    along_x = np.abs(gap[..., 0]) >= np.abs(gap[..., 1])
    x_action = np.where(gap[..., 0] < 0, 1, 2)
    y_action = np.where(gap[..., 1] < 0, 3, 4)
    return np.where(along_x, x_action, y_action)


def _pushing_actions(rng: np.random.Generator, pos: np.ndarray) -> np.ndarray:
    """(E, N): towards the other agents' centroid (contacts) 60% of the time, else uniform."""
    n = pos.shape[1]
    centroid = (pos.sum(axis=1, keepdims=True) - pos) / (n - 1)
    actions = np.where(rng.random(pos.shape[:2]) < 0.6, _greedy_towards(pos, centroid), rng.integers(0, 5, pos.shape[:2]))
    return actions.astype(np.int32)


def _random_actions(rng: np.random.Generator, pos: np.ndarray) -> np.ndarray:
    """(E, N) uniform movement actions."""
    return rng.integers(0, 5, pos.shape[:2]).astype(np.int32)


def _listener_actions(rng: np.random.Generator, pos: np.ndarray) -> np.ndarray:
    """(E, 2): a random word, and random moves for the listener."""
    return np.stack([rng.integers(0, 3, len(pos)), rng.integers(0, 5, len(pos))], axis=1).astype(np.int32)


def _load_world(par, data: dict, e: int) -> None:
    """Overwrite mpe2's world with replica ``e``'s state (float32 values as float64)."""
    world = par.unwrapped.world
    for i, agent in enumerate(world.agents):
        agent.state.p_pos = data["agent_pos"][e, i].astype(np.float64)
        agent.state.p_vel = data["agent_vel"][e, i].astype(np.float64)
    for l, landmark in enumerate(world.landmarks):
        landmark.state.p_pos = data["landmark_pos"][e, l].astype(np.float64)
    if "goal" in data:
        world.agents[0].goal_a = world.agents[1]
        world.agents[0].goal_b = world.landmarks[int(data["goal"][e, 0])]


def _close(ours: np.ndarray, ref: np.ndarray, what: str, tol: float) -> float:
    err = np.abs(ours.astype(np.float64) - ref)
    bad = err > tol + tol * np.abs(ref)
    assert not bad.any(), f"{what}: {int(bad.sum())} values differ, worst {err.max():.3g} at {np.argwhere(bad)[0]}"
    return float(err.max())


def _run_episode(name: str, make_ref, config: dict, policy, seed: int, resync: bool = False) -> dict:
    """One full episode of NUM_ENVS replicas against mpe2; returns the largest errors seen.
    ``resync``: load our state into mpe2's world before every step (each step from the same state)."""
    env = get_example_env_class(name)(seed=seed, **config)
    wrapper = EnvWrapper(env, num_envs=NUM_ENVS, env_backend="cpu")
    wrapper.reset_all_envs()
    data = wrapper.cuda_data_manager.host_view()
    refs = [make_ref() for _ in range(NUM_ENVS)]
    names = refs[0].possible_agents
    obs_width = {a: refs[0].observation_space(a).shape[0] for a in names}
    for e, par in enumerate(refs):
        par.reset(seed=seed + e)
        _load_world(par, data, e)
    tol = SYNCED_TOL if resync else FREE_TOL
    worst = {"obs": 0.0, "reward": 0.0, "contacts": 0}
    for e, par in enumerate(refs):  # the start state: observations at t = 0
        ref_obs = np.stack([np.pad(par.unwrapped.observe(a).astype(np.float64), (0, env.obs_dim - obs_width[a]))
                            for a in names])
        worst["obs"] = max(worst["obs"], _close(data[Constants.OBSERVATIONS][e], ref_obs, f"obs at reset, env {e}", tol))
    rng = np.random.default_rng(seed)
    for t in range(1, env.episode_length + 1):
        actions = policy(rng, data["agent_pos"])
        for e, par in enumerate(refs):
            if resync:
                _load_world(par, data, e)
        wrapper.env.step(actions[..., None])
        for e, par in enumerate(refs):
            obs, rew, term, trunc, _ = par.step({a: int(actions[e, i]) for i, a in enumerate(names)})
            ref_obs = np.stack([np.pad(obs[a].astype(np.float64), (0, env.obs_dim - obs_width[a])) for a in names])
            ref_rew = np.array([rew[a] for a in names])
            where = f"{name} seed {seed}, env {e}, step {t}"
            worst["obs"] = max(worst["obs"], _close(data[Constants.OBSERVATIONS][e], ref_obs, f"obs, {where}", tol))
            worst["reward"] = max(worst["reward"], _close(data[Constants.REWARDS][e], ref_rew, f"rewards, {where}", tol))
            assert data[Constants.TIMESTEP][e] == t
            assert data[Constants.DONE][e] == int(all(term[a] or trunc[a] for a in names)), where
            assert data[Constants.TRUNCATED][e] == int(all(trunc[a] for a in names)), where
            assert not any(term.values()), where
            if name == "mpe_simple_spread":  # the collision count: the local reward is an exact integer
                local = (ref_rew - (1 - env.local_ratio) * par.unwrapped.scenario.global_reward(par.unwrapped.world))
                worst["contacts"] += int(np.count_nonzero(np.round(local / env.local_ratio)))
    assert data[Constants.DONE].all() and data[Constants.TRUNCATED].all()
    return worst


SPREAD_CASES = {
    "N=3, pushing, step-synced": ({}, _pushing_actions, True),
    "N=5 lr=0.3, pushing, step-synced": ({"num_agents": 5, "local_ratio": 0.3}, _pushing_actions, True),
    "N=3, random, free-running": ({}, _random_actions, False),
}


@pytest.mark.parametrize("case", sorted(SPREAD_CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_simple_spread_numpy_step_matches_mpe2(case, seed):
    config, policy, resync = SPREAD_CASES[case]
    n, ratio = config.get("num_agents", 3), config.get("local_ratio", 0.5)
    make_ref = lambda: simple_spread_v3.parallel_env(N=n, local_ratio=ratio, max_cycles=25)  # noqa: E731
    worst = _run_episode("mpe_simple_spread", make_ref, config, policy, seed, resync=resync)
    assert worst["contacts"] > 0, "no collision happened: the contact force and penalty went untested"
    print(f"simple_spread {case}, seed {seed}: max |obs diff| {worst['obs']:.2e}, max |reward diff| "
          f"{worst['reward']:.2e}, {worst['contacts']} agent-steps in contact")


@pytest.mark.parametrize("resync", [True, False], ids=["step-synced", "free-running"])
@pytest.mark.parametrize("seed", [0, 1])
def test_simple_speaker_listener_numpy_step_matches_mpe2(resync, seed):
    make_ref = lambda: simple_speaker_listener_v4.parallel_env(max_cycles=25)  # noqa: E731
    worst = _run_episode("mpe_simple_speaker_listener", make_ref, {}, _listener_actions, seed, resync=resync)
    print(f"simple_speaker_listener seed {seed}, resync {resync}: max |obs diff| {worst['obs']:.2e}, "
          f"max |reward diff| {worst['reward']:.2e}")


@pytest.mark.parametrize("name,make_ref", [
    ("mpe_simple_spread", lambda: simple_spread_v3.parallel_env()),
    ("mpe_simple_speaker_listener", lambda: simple_speaker_listener_v4.parallel_env()),
])
def test_host_reset_reproduces_mpe2_reset_with_the_same_seed(name, make_ref):
    """``reset()`` draws mpe2's ``reset(seed=s)`` layout (and goal) from the same generator, as float32."""
    for seed in (0, 7, 123):
        env = get_example_env_class(name)(seed=seed)
        obs = env.reset()
        par = make_ref()
        ref_obs, _ = par.reset(seed=seed)
        world = par.unwrapped.world
        state = env._host_state
        np.testing.assert_array_equal(state["agent_pos"], np.array([a.state.p_pos for a in world.agents], np.float32))
        np.testing.assert_array_equal(state["landmark_pos"], np.array([l.state.p_pos for l in world.landmarks], np.float32))
        if "goal" in state:
            assert world.landmarks[int(state["goal"][0])] is world.agents[0].goal_b
        for i, a in enumerate(par.possible_agents):
            np.testing.assert_allclose(obs[i][: len(ref_obs[a])], ref_obs[a], atol=1e-6)
