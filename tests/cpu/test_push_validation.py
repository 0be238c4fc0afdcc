"""Bad data is refused at push time, before any kernel runs, with a typed error naming the array
and the fix: ragged inputs, pools that do not fit their targets, per-replica shape changes, and
reset observations outside ``observation_space``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.utils.obs_checks import check_reset_observations
from warp_drive.errors import DataShapeError, DataTypeError, SpaceMismatchError
from warp_drive.interop import WarpDrivePettingZooEnv, WarpDriveVectorEnv
from warp_drive.managers.data_manager import CPUDataManager
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext


class Line(CUDAEnvironmentContext):
    """N agents on a line; every piece of its data can be broken on purpose."""

    name = "Line"
    step_kernel_args = ("x", Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS, Constants.DONE, Constants.TIMESTEP)

    def __init__(self, num_agents: int = 3, obs: Any = None, x: Any = None, low: float = 0.0, env_backend: str = "cpu"):
        self.num_agents, self.episode_length, self.env_backend = num_agents, 5, env_backend
        box = spaces.Box(low, 1.0, shape=(2,), dtype=np.float32)
        self.observation_space = {a: box for a in range(num_agents)}
        self.action_space = {a: spaces.Discrete(3) for a in range(num_agents)}
        self.obs, self.x = obs, x
        self.calls = 0

    def reset(self) -> dict:
        self.calls += 1
        if callable(self.obs):
            return self.obs(self.calls)
        if self.obs is not None:
            return self.obs
        return {a: np.array([0.5, 0.5], np.float32) for a in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        x = self.x(self.calls) if callable(self.x) else self.x
        feed.add_data("x", np.zeros(self.num_agents, np.float32) if x is None else x, save_copy_and_apply_at_reset=True)
        return feed

    def numpy_step(self, data) -> None:
        data["x"][...] += data[Constants.ACTIONS][..., 0] - 1
        data[Constants.TIMESTEP] += 1


def wrap(env: Line, num_envs: int = 2) -> EnvWrapper:
    return EnvWrapper(env, num_envs=num_envs, env_backend="cpu")


# ----------------------------------------------------------------------------- ragged data
@pytest.mark.parametrize(
    "data, where",
    [
        ([[1.0, 2.0], [3.0]], "[1] is 1 entries but [0] is 2 entries"),
        ([[[1, 2], [3, 4]], [[5, 6], [7]]], "[1][1] is 1 entries but [1][0] is 2 entries"),
        ([np.zeros(3), np.zeros(2)], "[1] is 2 entries but [0] is 3 entries"),
        ([1.0, [2.0, 3.0]], "[1] is 2 entries but [0] is a scalar"),
    ],
)
def test_ragged_arrays_are_refused_naming_the_array_and_the_row(data, where):
    dm = CPUDataManager(num_agents=2, num_envs=2)
    with pytest.raises(DataShapeError, match="'positions' is ragged") as info:
        dm.push_data_to_device({"positions": data})
    assert where in str(info.value) and "pad the rows" in str(info.value)
    assert not dm.is_data_on_device("positions")


def test_ragged_object_array_and_assign_are_refused():
    dm = CPUDataManager(num_agents=2, num_envs=2)
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = [1.0, 2.0], [3.0]
    with pytest.raises(DataShapeError, match="'pos' is ragged"):
        dm.push_data_to_device({"pos": ragged})
    dm.push_data_to_device({"pos": np.zeros((2, 2), np.float32)})
    with pytest.raises(DataShapeError, match="'pos' is ragged"):
        dm.assign("pos", [[1.0, 2.0], [3.0]])
    with pytest.raises(DataTypeError, match="dtype object"):
        dm.assign("pos", np.array([{"a": 1}, {"b": 2}], dtype=object))


# ----------------------------------------------------------------------------- pools vs targets
def test_pool_rows_must_fit_the_target_slot_whichever_is_pushed_first():
    dm = CPUDataManager(num_agents=3, num_envs=2)
    feed = DataFeed()
    feed.add_data("x", np.zeros((2, 3), np.float32))
    feed.add_pool_for_reset("x_pool", np.zeros((4, 2), np.float32), reset_target="x")  # rows of 2, slots of 3
    with pytest.raises(DataShapeError, match=r"'x_pool' has rows of shape \(2,\), but its target 'x' has shape \(2, 3\)"):
        dm.push_data_to_device(feed)
    dm = CPUDataManager(num_agents=3, num_envs=2)
    pool_first = DataFeed()
    pool_first.add_pool_for_reset("y_pool", np.zeros((4, 3), np.int32), reset_target="y")
    pool_first.add_data("y", np.zeros((2, 3), np.float32))
    with pytest.raises(DataTypeError, match="'y_pool' is int32 but its target 'y' is float32"):
        dm.push_data_to_device(pool_first)


# ----------------------------------------------------------------------------- reset observations
def test_reset_observations_outside_the_space_are_refused_before_any_push():
    obs = {0: np.array([0.5, 0.5], np.float32), 1: np.array([0.5, 1.5], np.float32), 2: np.zeros(2, np.float32)}
    with pytest.raises(SpaceMismatchError, match=r"agent 1 lies outside its observation_space: element \(1,\) is 1.5") as info:
        wrap(Line(obs=obs))
    assert "allows [0.0, 1.0]" in str(info.value) and "widen the Box" in str(info.value)
    nan = {a: np.array([0.5, np.nan], np.float32) for a in range(3)}
    with pytest.raises(SpaceMismatchError, match="agent 0"):
        wrap(Line(obs=nan))


def test_reset_observations_of_the_wrong_shape_or_agents_are_refused():
    wrong = {a: np.zeros(3, np.float32) for a in range(3)}
    with pytest.raises(DataShapeError, match=r"agent 0 has shape \(3,\), but its observation_space .* has shape \(2,\)"):
        wrap(Line(obs=wrong))
    mixed = {0: np.zeros(2), 1: np.zeros(2), 2: np.zeros(3)}  # arrays of one env with inconsistent shapes
    with pytest.raises(DataShapeError, match="agent 2 has shape"):
        wrap(Line(obs=mixed))
    ragged = {0: [0.1, [0.2, 0.3]], 1: np.zeros(2), 2: np.zeros(2)}
    with pytest.raises(DataShapeError, match="agent 0 is ragged"):
        wrap(Line(obs=ragged))
    missing = {0: np.zeros(2), 1: np.zeros(2)}
    with pytest.raises(DataShapeError, match=r"missing: \[2\]"):
        wrap(Line(obs=missing))
    text = {a: np.array(["a", "b"]) for a in range(3)}
    with pytest.raises(DataTypeError, match="dtype <U1"):
        wrap(Line(obs=text))


def test_check_reset_observations_on_dict_and_discrete_spaces():
    space = spaces.Dict({"pos": spaces.Box(0.0, 1.0, (2,), np.float32), "id": spaces.Discrete(3)})
    good = {0: {"pos": np.array([0.1, 0.2]), "id": 2}}
    check_reset_observations(good, {0: space}, "Env")
    with pytest.raises(SpaceMismatchError, match="key 'id' of agent 0 is 3, outside"):
        check_reset_observations({0: {"pos": np.array([0.1, 0.2]), "id": 3}}, {0: space}, "Env")
    with pytest.raises(DataShapeError, match="no key 'pos'"):
        check_reset_observations({0: {"id": 1}}, {0: space}, "Env")


def test_valid_env_still_wraps_and_steps():
    w = wrap(Line())
    w.reset_all_envs()
    w.step_all_envs(np.full((2, 3, 1), 2, np.int32))
    np.testing.assert_array_equal(w.cuda_data_manager.pull_data_from_device("x"), np.ones((2, 3)))


# ----------------------------------------------------------------------------- later resets through the adapters
def test_adapter_reset_refuses_a_start_state_of_another_shape():
    env = Line(x=lambda calls: np.zeros(3 if calls < 4 else 4, np.float32))
    vec = WarpDriveVectorEnv(env, num_envs=2, flatten_agents=True)
    vec.reset(seed=0)  # reset() calls 2 and 3 (one per replica): fine
    with pytest.raises(DataShapeError, match=r"replica 0's new 'x' has shape \(4,\).* slot .* has shape \(3,\)"):
        vec.reset(seed=1)


def test_adapter_reset_refuses_observations_outside_the_space():
    env = Line(obs=lambda calls: {a: np.full(2, 0.5 if calls < 3 else 2.0, np.float32) for a in range(3)})
    pz = WarpDrivePettingZooEnv(env)
    pz.reset(seed=0)
    with pytest.raises(SpaceMismatchError, match="agent 0 lies outside"):
        pz.reset(seed=1)


class SeededLine(Line):
    """Draws ``weights`` (shared by all replicas) from its seed; ``counter`` is shared state its step changes."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.reseed(0)

    def reseed(self, seed: int) -> None:
        self.weights = np.random.default_rng(seed).random(self.num_agents).astype(np.float32)

    def get_data_dictionary(self) -> DataFeed:
        feed = super().get_data_dictionary()
        feed.add_data("weights", self.weights.copy())
        feed.add_data("counter", np.zeros(1, np.int32))
        return feed

    def numpy_step(self, data) -> None:
        super().numpy_step(data)
        data["counter"] += 1


def test_reset_seed_rewrites_only_the_shared_arrays_the_reseed_changed():
    vec = WarpDriveVectorEnv(SeededLine(), num_envs=2, flatten_agents=True)
    dm = vec.data_manager
    vec.reset(seed=5)
    np.testing.assert_array_equal(dm.pull_data_from_device("weights"), np.random.default_rng(5).random(3).astype(np.float32))
    for _ in range(3):
        vec.step(np.ones(6, np.int64))
    vec.reset(seed=6)
    np.testing.assert_array_equal(dm.pull_data_from_device("weights"), np.random.default_rng(6).random(3).astype(np.float32))
    assert dm.pull_data_from_device("counter").tolist() == [3]  # the env did not redraw it: kept
