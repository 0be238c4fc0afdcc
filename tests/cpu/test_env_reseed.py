"""The example envs' seeding hooks: ``reseed(s)`` makes an env behave as if built with ``seed=s``
(roles, reset pools, start states); ``reseed_start_states(s)`` re-seeds only the start states."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from example_envs import example_env_names, get_example_env_class
from warp_drive.errors import ConfigError

SMALL = {
    "tag_continuous": dict(num_taggers=2, num_runners=5),
    "tag_gridworld": dict(num_taggers=2, grid_length=5),
    "tag_gridworld_with_reset_pool": dict(num_taggers=2, grid_length=5, reset_pool_size=4),
    "cartpole": dict(reset_pool_size=4),
}


def _feeds(env) -> dict[str, np.ndarray]:
    out = {}
    for feed in (env.get_data_dictionary(), env.get_tensor_dictionary(), env.get_reset_pool_dictionary()):
        out.update({k: np.asarray(v["data"]) for k, v in feed.items()})
    return out


@pytest.mark.parametrize("name", example_env_names())
def test_reseed_equals_building_with_the_seed(name):
    cls = get_example_env_class(name)
    config = SMALL.get(name, {})
    takes_seed = any("seed" in inspect.signature(k.__init__).parameters for k in cls.__mro__ if "__init__" in vars(k))
    if not takes_seed:  # an env that draws nothing at random (DummyEnv)
        a, b = cls(**config), cls(**config)
        a.reseed(7)  # the contract's default: nothing to re-seed
        assert not hasattr(a, "rng") and all(np.array_equal(x, y) for x, y in zip(a.reset().values(), b.reset().values()))
        return
    env = cls(**config)  # no seed: fresh entropy
    env.reseed(7)
    fresh = cls(**config, seed=7)
    for a, b in zip(env.reset().values(), fresh.reset().values()):
        np.testing.assert_array_equal(a, b)
    mine, theirs = _feeds(env), _feeds(fresh)
    assert mine.keys() == theirs.keys()
    for key in mine:
        np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)
    assert env.seed == 7
    with pytest.raises(ConfigError):
        env.reseed(-1)


def test_reseed_start_states_keeps_tag_roles():
    tag = get_example_env_class("tag_continuous")
    env = tag(num_taggers=2, num_runners=5, seed=1)
    roles = env.tagger_ids.copy()
    env.reseed_start_states(9)
    np.testing.assert_array_equal(env.tagger_ids, roles)
    env.reset()
    fresh = tag(num_taggers=2, num_runners=5, seed=9)
    fresh.reset()
    for key in ("loc_x", "loc_y", "direction"):  # the start a fresh env with seed 9 draws first
        np.testing.assert_array_equal(env._host_state[key], fresh._host_state[key])


def test_reseed_start_states_keeps_classic_control_pools():
    cls = get_example_env_class("cartpole")
    env = cls(reset_pool_size=4, seed=0)
    pool = env.reset_pool()[0].copy()
    env.reseed_start_states(3)
    np.testing.assert_array_equal(env.reset_pool()[0], pool)
    np.testing.assert_array_equal(env.reset()[0], cls(seed=3).reset()[0])


def test_default_reseed_replaces_a_public_rng_and_reseed_start_states_follows():
    """The env contract's defaults (envs written like tutorial 4's Gather): ``reseed`` replaces a
    public ``rng`` Generator, ``reseed_start_states`` calls ``reseed``; bad seeds are refused."""
    from warp_drive.env import CUDAEnvironmentContext

    class Drawn(CUDAEnvironmentContext):
        def __init__(self, seed=None):
            self.rng = np.random.default_rng(seed)

    env = Drawn()
    env.reseed(3)
    assert env.rng.random() == np.random.default_rng(3).random()
    env.reseed_start_states(4)
    assert env.rng.random() == np.random.default_rng(4).random()
    with pytest.raises(ConfigError, match="non-negative"):
        env.reseed(True)
