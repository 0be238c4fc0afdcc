"""EnvWrapper, Sampler, EnvironmentReset and LogController on the CPU backend."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataShapeError, DataTypeError, SamplerError, UsageError
from warp_drive.services.log_controller import LogController
from warp_drive.services.sampler import Sampler
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.env_registrar import EnvironmentRegistrar


@pytest.fixture()
def wrapper() -> EnvWrapper:
    w = EnvWrapper(ToyLine(num_agents=5, episode_length=7), num_envs=3, env_backend="cpu")
    w.reset_all_envs()
    return w


def test_first_reset_pushes_replicas_and_placeholders(wrapper):
    dm = wrapper.cuda_data_manager
    assert dm.get_shape("x") == (3, 5) and dm.get_shape("at_goal") == (3,)
    assert dm.get_shape(Constants.OBSERVATIONS) == (3, 5, 1)
    assert dm.get_shape(Constants.ACTIONS) == (3, 5, 1) and dm.get_dtype(Constants.ACTIONS) == "int32"
    assert dm.get_shape(Constants.REWARDS) == (3, 5)
    assert "x" in dm.reset_data_list and Constants.OBSERVATIONS in dm.reset_data_list


def test_step_and_reset_only_done_envs(wrapper):
    dm = wrapper.cuda_data_manager
    x0 = dm.pull_data_from_device("x")
    actions = np.full((3, 5, 1), 2, np.int32)  # move right
    wrapper.step_all_envs(actions)
    np.testing.assert_array_equal(dm.pull_data_from_device("x"), x0 + 1)
    np.testing.assert_array_equal(dm.pull_data_from_device(Constants.TIMESTEP), [1, 1, 1])
    dm.data_on_device_via_torch(Constants.DONE)[1] = 1
    wrapper.reset_only_done_envs()
    x = dm.pull_data_from_device("x")
    np.testing.assert_array_equal(x[1], x0[1])  # restored
    np.testing.assert_array_equal(x[[0, 2]], x0[[0, 2]] + 1)  # untouched
    np.testing.assert_array_equal(dm.pull_data_from_device(Constants.TIMESTEP), [1, 0, 1])
    np.testing.assert_array_equal(dm.pull_data_from_device(Constants.DONE), [0, 0, 0])
    assert wrapper.reset_all_envs() == {}
    np.testing.assert_array_equal(dm.pull_data_from_device("x"), x0)


def test_time_limit_sets_done(wrapper):
    for _ in range(7):
        wrapper.step_all_envs(np.ones((3, 5, 1), np.int32))
    np.testing.assert_array_equal(wrapper.done_flags().numpy(), [1, 1, 1])


def test_backend_and_order_errors():
    with pytest.raises(ConfigError, match="numba"):
        EnvWrapper(ToyLine(), env_backend="numba")
    with pytest.raises(ConfigError, match="unknown"):
        EnvWrapper(ToyLine(), env_backend="tpu")
    w = EnvWrapper(ToyLine(), env_backend="cpu")
    with pytest.raises(UsageError, match="reset_all_envs"):  # call order: a usage error, not a config one
        w.step_all_envs()
    with pytest.raises(ConfigError, match="num_envs"):
        EnvWrapper(ToyLine(), num_envs=0)


def test_registrar_is_per_instance():
    r1, r2 = EnvironmentRegistrar(), EnvironmentRegistrar()
    r1.add(env_backend="cpu")(ToyLine)
    assert r1.has_env("toyline") and not r2.has_env("toyline")
    w = EnvWrapper(env_name="ToyLine", env_config={"num_agents": 2}, env_registrar=r1, num_envs=2)
    assert w.n_agents == 2


def test_sampler_frequencies_and_determinism(wrapper):
    dm = wrapper.cuda_data_manager
    sampler = Sampler(wrapper.cuda_function_manager)
    sampler.init_random(7)
    sampler.register_actions(dm, Constants.ACTIONS, 3)
    probs = torch.tensor([0.2, 0.5, 0.3]).expand(3, 5, 3).contiguous()
    counts = np.zeros(3)
    first = None
    for i in range(8000):  # 8000 x 15 rows = 1.2e5 draws
        sampler.sample(dm, probs, Constants.ACTIONS, check=(i == 0))
        acts = dm.pull_data_from_device(Constants.ACTIONS)
        first = acts.copy() if first is None else first
        counts += np.bincount(acts.ravel(), minlength=3)
    freq = counts / counts.sum()
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.005)  # 4+ sigma at 1.2e5 draws
    sampler.init_random(7)
    sampler.sample(dm, probs, Constants.ACTIONS)
    np.testing.assert_array_equal(dm.pull_data_from_device(Constants.ACTIONS), first)


def test_sampler_input_errors(wrapper):
    dm = wrapper.cuda_data_manager
    sampler = Sampler(wrapper.cuda_function_manager)
    with pytest.raises(SamplerError, match="init_random"):
        sampler.sample(dm, torch.ones(3, 5, 3) / 3, Constants.ACTIONS)
    sampler.init_random(1)
    sampler.register_actions(dm, Constants.ACTIONS, 3)
    with pytest.raises(DataShapeError, match=r"expected \(num_envs=3, num_agents=5, n\)"):
        sampler.sample(dm, torch.ones(3, 4, 3) / 3, Constants.ACTIONS)
    with pytest.raises(DataTypeError, match="float32"):
        sampler.sample(dm, torch.ones(3, 5, 3, dtype=torch.float64) / 3, Constants.ACTIONS)
    bad = torch.ones(3, 5, 3) / 3
    bad[1, 2, 0] = float("nan")
    with pytest.raises(SamplerError, match="NaN.*env 1, agent 2"):
        sampler.sample(dm, bad, Constants.ACTIONS)
    with pytest.raises(SamplerError, match="do not sum to 1"):
        sampler.sample(dm, torch.ones(3, 5, 3), Constants.ACTIONS)
    sampler.sample(dm, torch.ones(3, 5, 3) / 3, Constants.ACTIONS)  # flag was cleared


def test_argmax(wrapper):
    dm = wrapper.cuda_data_manager
    sampler = Sampler(wrapper.cuda_function_manager)
    sampler.init_random(0)
    sampler.register_actions(dm, Constants.ACTIONS, 3)
    probs = torch.tensor([0.1, 0.6, 0.3]).expand(3, 5, 3).contiguous()
    sampler.sample(dm, probs, Constants.ACTIONS, use_argmax=True)
    assert (dm.pull_data_from_device(Constants.ACTIONS) == 1).all()


def test_log_controller(wrapper):
    w = EnvWrapper(_LoggedToy(num_agents=2, episode_length=3), num_envs=2, env_backend="cpu")
    w.reset_all_envs()
    log = LogController(w.cuda_function_manager)
    log.reset_log(w.cuda_data_manager, env_id=1)
    for t in (1, 2):
        w.step_all_envs(np.full((2, 2, 1), 2, np.int32))
        log.update_log(w.cuda_data_manager, t)
    out = log.fetch_log(w.cuda_data_manager)["x_for_log"]
    np.testing.assert_array_equal(out, [[0.0, 0.5], [1.0, 1.5], [2.0, 2.5]])
    with pytest.raises(ConfigError, match="greater than the last logged step"):
        log.update_log(w.cuda_data_manager, 2)


class _LoggedToy(ToyLine):
    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("x", self.x0(), save_copy_and_apply_at_reset=True, log_data_across_episode=True)
        feed.add_data("at_goal", np.int32(0), save_copy_and_apply_at_reset=True)
        feed.add_data("goal", self.goal)
        return feed


class _PooledToy(ToyLine):
    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("x", self.x0())
        feed.add_data("y", self.x0())
        feed.add_data("at_goal", np.int32(0), save_copy_and_apply_at_reset=True)
        feed.add_data("goal", self.goal)
        return feed

    def get_reset_pool_dictionary(self) -> DataFeed:
        pool = np.arange(4, dtype=np.float32)[:, None] * np.ones(self.num_agents, np.float32)
        feed = DataFeed()
        feed.add_pool_for_reset("x_pool", pool, reset_target="x")
        feed.add_pool_for_reset("y_pool", pool * 10, reset_target="y")
        return feed


def test_reset_pools_drawn_per_env_and_aligned():
    w = EnvWrapper(_PooledToy(num_agents=3), num_envs=64, env_backend="cpu")
    w.reset_all_envs()
    dm = w.cuda_data_manager
    rows = []
    for _ in range(30):
        w.reset_all_envs()
        x, y = dm.pull_data_from_device("x"), dm.pull_data_from_device("y")
        np.testing.assert_array_equal(y, 10 * x)  # x and y from the same pool row
        assert (x == x[:, :1]).all()
        rows.append(x[:, 0])
    rows = np.concatenate(rows)
    assert set(np.unique(rows)) == {0.0, 1.0, 2.0, 3.0}
    assert abs(rows.mean() - 1.5) < 0.1  # uniform over 4 rows, 1920 draws
