"""Per-env array schemas: an env declares the shape and dtype of each of its arrays, checked at push.

An env lists its arrays as its feeds give them for ONE env (before the wrapper adds the env
axis)::

    class MyEnv(CUDAEnvironmentContext):
        array_schema = {
            "loc_x": ArraySpec(("num_agents",)),            # float32 (N,)
            "grid": ArraySpec(("grid_length", "grid_length"), "int32"),
            "num_runners": ArraySpec((), "int32"),           # a scalar
        }

A string dimension names an int attribute of the env. The wrapper checks the arrays when it pushes
them (:func:`check_array_schema`), before any kernel runs, instead of a raw NumPy error at the first
step; envs without a schema get only the data manager's checks (dtype rules, ragged data, pools).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from warp_drive.errors import ConfigError, DataShapeError, DataTypeError

Dim = Union[int, str]

#: dtype name -> NumPy kinds accepted for it (ints and bools may be given for int32 arrays).
_KINDS = {"float32": "f", "int32": "iub"}


@dataclass(frozen=True)
class ArraySpec:
    """Shape and dtype of one env array (one env's slot: no env axis).

    Attributes:
        shape: dimensions, each an int or the name of an int attribute of the env
            (``"num_agents"``); ``()`` for a scalar.
        dtype: ``"float32"`` or ``"int32"`` (the dtypes that cross to the device; float64 and
            int64 data are accepted and cast as usual).
        optional: the env provides the array only in some configurations (e.g. a reset pool);
            checked when present.
    """

    shape: tuple[Dim, ...] = ()
    dtype: str = "float32"
    optional: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in _KINDS:
            raise ConfigError(f"ArraySpec dtype={self.dtype!r} is unknown; use 'float32' or 'int32'")
        for dim in self.shape:
            if isinstance(dim, bool) or not isinstance(dim, (int, str)) or isinstance(dim, int) and dim < 0:
                raise ConfigError(f"ArraySpec dimension {dim!r} must be an int >= 0 or an env attribute name")

    def resolve(self, env: Any) -> tuple[int, ...]:
        """The concrete shape for ``env`` (symbolic dimensions looked up on it).

        Raises:
            ConfigError: a symbolic dimension is not an int attribute of ``env``.
        """
        return tuple(_dim(env, d) for d in self.shape)

    def describe(self, env: Any) -> str:
        """``"(num_agents=11, 2) float32"``."""
        parts = [f"{d}={_dim(env, d)}" if isinstance(d, str) else str(d) for d in self.shape]
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''}) {self.dtype}"


def _dim(env: Any, dim: Dim) -> int:
    if isinstance(dim, int):
        return dim
    value = getattr(env, dim, None)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(
            f"{type(env).__name__}.array_schema uses the dimension {dim!r}, but the env has no int attribute "
            f"{dim!r} (got {value!r}); set it in __init__ or use a number"
        )
    return int(value)


def check_array_schema(env: Any, feeds: Iterable[Mapping[str, Any]]) -> None:
    """Check the arrays of ``feeds`` (DataFeeds of one env) against ``env.array_schema``.

    Raises:
        DataShapeError: a declared array is missing from the feeds or has another shape.
        DataTypeError: a declared array holds floats where ints are declared, or the reverse.
    """
    schema: Mapping[str, ArraySpec] = getattr(env, "array_schema", None) or {}
    if not schema:
        return
    env_name = type(env).__name__
    values = {name: entry["data"] for feed in feeds for name, entry in feed.items()}
    for name, spec in schema.items():
        if name not in values:
            if spec.optional:
                continue
            raise DataShapeError(
                f"{env_name}: array_schema declares '{name}', but the env's feeds do not provide it; add it to "
                f"get_data_dictionary() (or get_tensor_dictionary()), or drop it from array_schema"
            )
        try:
            arr = np.asarray(values[name])
        except ValueError:
            continue  # ragged: the data manager names where, at push
        if arr.shape != spec.resolve(env):
            raise DataShapeError(
                f"{env_name}: '{name}' has shape {arr.shape} for one env, but array_schema expects "
                f"{spec.describe(env)}; every array of one env must fit the env's agent count and constants "
                f"(fix the array, or the attribute the schema names)"
            )
        if arr.dtype.kind not in _KINDS[spec.dtype]:
            raise DataTypeError(
                f"{env_name}: '{name}' holds {arr.dtype} values, but array_schema declares {spec.dtype}; "
                f"cast it with .astype(np.{spec.dtype})"
            )
