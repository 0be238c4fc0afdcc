"""DataManager on the CPU backend: dtype rules, shapes, names, reset copies, logs, pools."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from warp_drive.errors import ConfigError, DataNotFoundError, DataShapeError, DataTypeError, DuplicateDataError
from warp_drive.managers.data_manager import CPUDataManager
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed


@pytest.fixture()
def dm() -> CPUDataManager:
    return CPUDataManager(num_agents=3, num_envs=2, episode_length=4)


def test_meta_info_and_reserved_arrays(dm):
    assert dm.meta_info("n_agents") == 3 and dm.meta_info("n_agents").dtype == np.int32
    assert dm.meta_info("episode_length") == 4
    assert dm.get_shape(Constants.DONE) == (2,) and dm.get_dtype(Constants.DONE) == "int32"
    assert dm.get_shape(Constants.LOG_MASK) == (5,)
    dm.add_meta_info({"learning_rate": 0.01})
    assert dm.meta_info("learning_rate").dtype == np.float32


@pytest.mark.parametrize("value", [0, -1, 2.5, True, None])
def test_bad_sizes_are_config_errors(value):
    with pytest.raises(ConfigError, match="num_envs"):
        CPUDataManager(num_agents=2, num_envs=value, episode_length=3)


@pytest.mark.parametrize(
    "data,dtype", [(np.ones((2, 3)), np.float32), (np.ones((2, 3), np.int64), np.int32), ([[1, 2, 3]], np.int32),
                   (np.ones(4, np.float32), np.float32), (np.ones((2, 2, 2), np.int32), np.int32)]
)
def test_dtype_rules_cast_64_bit(dm, data, dtype):
    dm.push_data_to_device({"a": data})
    assert dm.pull_data_from_device("a").dtype == dtype
    np.testing.assert_array_equal(dm.pull_data_from_device("a"), np.asarray(data).astype(dtype))


@pytest.mark.parametrize("data", [np.ones(3, bool), np.ones(3, np.uint8), np.ones(3, np.float16), np.ones(3, np.complex64)])
def test_other_dtypes_are_refused_with_the_fix(dm, data):
    with pytest.raises(DataTypeError, match=r"astype\(np\.(int32|float32)\)"):
        dm.push_data_to_device({"bad": data})


def test_int64_out_of_range_refused(dm):
    with pytest.raises(DataTypeError, match="int32 range"):
        dm.push_data_to_device({"big": np.array([2**40])})


def test_scalars_pass_by_value(dm):
    dm.push_data_to_device({"k": 7, "f": 0.5, "b": True})
    assert dm.device_data("k") == 7 and dm.device_data("k").dtype == np.int32
    assert dm.device_data("f").dtype == np.float32
    assert dm.device_data("b") == 1 and dm.scalar_data_list == ["k", "f", "b"]


def test_duplicate_and_reserved_names(dm):
    dm.push_data_to_device({"a": np.zeros(2, np.float32)})
    with pytest.raises(DuplicateDataError, match="'a'"):
        dm.push_data_to_device({"a": np.zeros(2, np.float32)})
    with pytest.raises(DuplicateDataError, match="reserved"):
        dm.push_data_to_device({Constants.DONE: np.zeros(2, np.int32)})


def test_unknown_name_lists_known(dm):
    dm.push_data_to_device({"loc_x": np.zeros(2, np.float32)})
    with pytest.raises(DataNotFoundError, match="'loc_z' is not on the device; pushed: .*loc_x"):
        dm.data_on_device_via_torch("loc_z")


def test_torch_and_numpy_share_memory(dm):
    dm.push_data_to_device({"a": np.zeros((2, 3), np.float32)}, torch_accessible=True)
    t = dm.data_on_device_via_torch("a")
    t += 2.0
    np.testing.assert_array_equal(dm.host_view()["a"], np.full((2, 3), 2.0, np.float32))
    dm.host_view()["a"][0, 0] = 9.0
    assert t[0, 0].item() == 9.0
    assert dm.is_data_on_device_via_torch("a")


def test_save_copy_needs_env_axis(dm):
    feed = DataFeed()
    feed.add_data("x", np.zeros(3, np.float32), save_copy_and_apply_at_reset=True)
    with pytest.raises(DataShapeError, match="leading env axis"):
        dm.push_data_to_device(feed)


def test_log_and_pool_registration(dm):
    feed = DataFeed()
    feed.add_data("pos", np.zeros((2, 3), np.float32), log_data_across_episode=True)
    feed.add_pool_for_reset("pos_pool", np.zeros((5, 3), np.float32), reset_target="pos")
    dm.push_data_to_device(feed)
    assert dm.get_shape("pos" + Constants.LOG_SUFFIX) == (5, 3)
    assert dm.get_reset_pool("pos") == "pos_pool" and dm.log_data_list == ["pos"]
    bad = DataFeed()
    bad.add_pool_for_reset("tiny", np.zeros((1, 3), np.float32), reset_target="other")
    with pytest.raises(DataShapeError, match="at least 2 rows"):
        dm.push_data_to_device(bad)


def test_assign_checks_shape_and_kind(dm):
    dm.push_data_to_device({"a": np.zeros((2, 3), np.int32)})
    dm.assign("a", np.ones((2, 3), np.int64))
    assert dm.pull_data_from_device("a").sum() == 6
    with pytest.raises(DataShapeError):
        dm.assign("a", np.ones((3, 2)))
    with pytest.raises(DataTypeError):
        dm.assign("a", torch.ones(2, 3))


def test_data_feed_list_forms():
    feed = DataFeed()
    feed.add_data_list([("a", np.zeros(2), True), {"name": "b", "data": 1}])
    assert feed["a"]["attributes"]["save_copy_and_apply_at_reset"] is True
    with pytest.raises(DuplicateDataError):
        feed.add_data("a", 1)
    with pytest.raises(DataShapeError):
        feed.add_data_list([("only_name",)])
