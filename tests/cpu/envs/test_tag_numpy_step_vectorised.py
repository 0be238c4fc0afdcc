"""Tag continuous NumPy step: the vectorised neighbour search and observation writer against
plain reference formulations (stable full sort, per-feature gathers and a concatenation).

The references below are the specification the CUDA kernel mirrors (K nearest by float32 squared
distance, ties by lower id; README's observation layout); the fast versions must be bit-identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from example_envs.tag_continuous import constants as C
from example_envs.tag_continuous.tag_continuous import TagContinuous, compute_observations, nearest_agents
from warp_drive.utils.constants import Constants
from warp_drive.testing.rollout_animation import numpy_data_store

F32 = np.float32


def reference_nearest(x, y, still, k):
    n = x.shape[1]
    dx = x[:, None, :] - x[:, :, None]
    dy = y[:, None, :] - y[:, :, None]
    d2 = dx * dx + dy * dy
    valid = (still[:, None, :] != 0) & ~np.eye(n, dtype=bool)
    order = np.argsort(np.where(valid, d2, np.inf), axis=2, kind="stable")[:, :, :k]
    return order, np.take_along_axis(valid, order, axis=2) & (still[:, :, None] != 0)


def reference_observations(x, y, speed, acc, direction, types, still, timestep, episode_length, grid_length,
                           max_speed, full, k):
    num_envs, n = x.shape
    in_self = still != 0
    time_frac = np.where(in_self, (timestep.astype(F32) / F32(episode_length))[:, None], F32(0))
    if full:
        slot = np.arange(n - 1)
        others = np.broadcast_to(slot + (slot >= np.arange(n)[:, None]), (num_envs, n, n - 1))
        ok = np.broadcast_to(in_self[:, :, None], others.shape)
        present = np.ones(others.shape, bool)
    else:
        others, present = reference_nearest(x, y, still, k)
        ok = present
    env = np.arange(num_envs)[:, None, None]

    def rel(f, scale):
        return np.where(ok, (f[env, others] - f[:, :, None]) / scale, F32(0))

    pos = grid_length * C.SQRT2
    rows = [rel(x, pos), rel(y, pos), rel(speed, max_speed), rel(acc, max_speed), rel(direction, C.TWO_PI),
            np.where(present, types[others].astype(F32), F32(0)), np.where(present, still[env, others].astype(F32), F32(0))]
    return np.concatenate([*rows, time_frac[:, :, None]], axis=2).astype(F32)


def _state(rng, num_envs, n, ties):
    x = rng.uniform(0, 20, (num_envs, n)).astype(F32)
    y = rng.uniform(0, 20, (num_envs, n)).astype(F32)
    if ties:  # whole-number positions and stacked agents: many equal distances
        x, y = np.round(x), np.round(y)
        x[:, ::5], y[:, ::5] = x[:, :1], y[:, :1]
    still = (rng.random((num_envs, n)) < 0.75).astype(np.int32)
    return x, y, still


@pytest.mark.parametrize("num_envs, n, k", [(30, 110, 10), (7, 5, 4), (3, 2, 1), (4, 130, 129), (2, 300, 20)])
@pytest.mark.parametrize("ties", [False, True])
def test_nearest_agents_equal_a_stable_full_sort(num_envs, n, k, ties):
    x, y, still = _state(np.random.default_rng(n + k), num_envs, n, ties)
    ids, present = nearest_agents(x, y, still, k)
    ref_ids, ref_present = reference_nearest(x, y, still, k)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_array_equal(present, ref_present)


def test_nearest_agents_in_env_chunks_with_reused_scratch(monkeypatch):
    """Envs split into chunks of 3, 3 and 2 (scratch arrays reused as views), then a bigger call."""
    import example_envs.tag_continuous.numpy_twin as twin

    n = 12
    monkeypatch.setattr(twin, "_PAIR_CHUNK", 3 * n * n)
    rng = np.random.default_rng(5)
    for num_envs in (8, 2, 11):
        x, y, still = _state(rng, num_envs, n, ties=True)
        ids, present = nearest_agents(x, y, still, 4)
        ref_ids, ref_present = reference_nearest(x, y, still, 4)
        np.testing.assert_array_equal(ids, ref_ids)
        np.testing.assert_array_equal(present, ref_present)


@pytest.mark.parametrize("full, n, k", [(False, 110, 10), (False, 6, 5), (True, 9, 3), (True, 2, 1)])
def test_observations_bit_identical_to_the_reference_layout(full, n, k):
    rng = np.random.default_rng(3)
    num_envs = 12
    x, y, still = _state(rng, num_envs, n, ties=True)
    speed, acc = rng.uniform(0, 1, (num_envs, n)).astype(F32), rng.uniform(-0.1, 0.1, (num_envs, n)).astype(F32)
    direction = rng.uniform(0, 6.28, (num_envs, n)).astype(F32)
    types = (rng.random(n) < 0.3).astype(np.int32)
    timestep = rng.integers(0, 500, num_envs).astype(np.int32)
    args = (x, y, speed, acc, direction, types, still, timestep, 500, F32(20), F32(1), full, k)
    expected = reference_observations(*args)
    fresh = compute_observations(*args)
    out = np.full(expected.shape, np.nan, F32)
    written = compute_observations(*args, out=out)
    assert written is out
    np.testing.assert_array_equal(fresh.view(np.int32), expected.view(np.int32))
    np.testing.assert_array_equal(out.view(np.int32), expected.view(np.int32))
    wrong = np.zeros((num_envs, n, 3), F32)  # an `out` of another shape is not used
    assert compute_observations(*args, out=wrong) is not wrong


def test_numpy_step_writes_the_observations_in_place():
    env = TagContinuous(num_taggers=2, num_runners=8, grid_length=5.0, episode_length=20,
                        use_full_observation=False, num_other_agents_observed=3, seed=0)
    data = numpy_data_store(env, num_envs=4)
    obs = data[Constants.OBSERVATIONS]
    before = obs.__array_interface__["data"][0]
    rng = np.random.default_rng(0)
    data[Constants.ACTIONS][...] = rng.integers(0, 11, data[Constants.ACTIONS].shape)
    env.numpy_step(data)
    assert data[Constants.OBSERVATIONS] is obs and obs.__array_interface__["data"][0] == before
    expected = reference_observations(
        data["loc_x"], data["loc_y"], data["speed"], data["acceleration"], data["direction"], data["agent_types"],
        data["still_in_the_game"], data[Constants.TIMESTEP], 20, F32(5.0), F32(1.0), False, 3)
    np.testing.assert_array_equal(obs.view(np.int32), expected.view(np.int32))
