"""Build gymnasium spaces from an observation dict."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

BIG_NUMBER = 1e20


def _box(obs: Any) -> spaces.Box:
    arr = np.asarray(obs)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    dtype = arr.dtype if arr.dtype in (np.float32, np.int32) else np.float32
    bound = BIG_NUMBER
    if np.issubdtype(dtype, np.integer):
        bound = float(np.iinfo(dtype).max)
    return spaces.Box(low=-bound, high=bound, shape=arr.shape, dtype=dtype)


def recursive_obs_dict_to_spaces_dict(obs: dict) -> spaces.Dict:
    """``{key: array or nested dict}`` -> ``gymnasium.spaces.Dict`` of Boxes (scalars become shape (1,))."""
    out = {}
    for key, value in obs.items():
        out[key] = recursive_obs_dict_to_spaces_dict(value) if isinstance(value, dict) else _box(value)
    return spaces.Dict(out)
