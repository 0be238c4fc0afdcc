"""Build gymnasium spaces from an observation dict."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from warp_drive.errors import DataTypeError

BIG_NUMBER = 1e20


def _box(key: Any, obs: Any) -> spaces.Box:
    if not isinstance(obs, (list, tuple, np.ndarray, int, float, np.integer, np.floating, bool, np.bool_)):
        raise DataTypeError(
            f"observation {key!r} is a {type(obs).__name__}; observations are arrays, numbers or dicts of them"
        )
    arr = np.asarray(obs)
    if arr.dtype.kind not in "biuf":
        raise DataTypeError(f"observation {key!r} has dtype {arr.dtype}; use a numeric array")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    # arrays reach the device as 32-bit: int32 stays int32, everything else is float32
    dtype = np.dtype(np.int32) if arr.dtype == np.int32 else np.dtype(np.float32)
    bound = float(np.iinfo(dtype).max) if dtype.kind == "i" else BIG_NUMBER
    return spaces.Box(low=-bound, high=bound, shape=arr.shape, dtype=dtype)


def recursive_obs_dict_to_spaces_dict(obs: dict) -> spaces.Dict:
    """``{key: array or nested dict}`` -> ``gymnasium.spaces.Dict`` of Boxes (scalars become shape (1,)).

    Raises:
        DataTypeError: ``obs`` is not a dict, or holds something other than numbers and arrays.
    """
    if not isinstance(obs, dict):
        raise DataTypeError(f"expected a dict of observations, got {type(obs).__name__}")
    return spaces.Dict({key: recursive_obs_dict_to_spaces_dict(value) if isinstance(value, dict) else _box(key, value)
                        for key, value in obs.items()})
