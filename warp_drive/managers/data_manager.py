"""DataManager: one store of named arrays shared by kernels and PyTorch.

Every array lives in one torch tensor on the backend's device (CUDA for pycuda, CPU for the cpu
backend). Kernels receive the tensor's memory (a raw pointer on the GPU, a NumPy view on the CPU),
so PyTorch and the kernels always see the same bytes: nothing is copied between them.

dtype rules (enforced on every push):

- float32 and int32 arrays are stored as they are;
- float64 is cast to float32 and int64 to int32 (values outside the int32 range are refused);
- any other dtype (bool, uint8, float16, complex, object, ...) is refused with
  :class:`~warp_drive.errors.DataTypeError` saying which cast to apply;
- Python and NumPy scalars (bools included) become int32 / float32 values passed by value to
  kernels.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import torch

from warp_drive.errors import (
    ConfigError,
    DataNotFoundError,
    DataShapeError,
    DataTypeError,
    DuplicateDataError,
    UsageError,
)
from warp_drive.vocab.constants import Constants
from warp_drive.vocab.data_feed import DataFeed

_INT32 = np.iinfo(np.int32)


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int; ConfigError naming ``name`` unless it is a positive integer (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _ragged_detail(data: Any, path: str = "") -> str | None:
    """Where nested sequences in ``data`` stop being rectangular (``"[2] has 3 entries but [0] has 4"``), or None."""
    if _nested_shape(data) is not None:
        return None
    items = list(data)
    shapes = [_nested_shape(x) for x in items]
    for i, x in enumerate(items):  # the innermost place first
        if shapes[i] is None:
            return _ragged_detail(x, f"{path}[{i}]")
    for i, shape in enumerate(shapes[1:], start=1):
        if shape != shapes[0]:
            def describe(sh: tuple[int, ...] | None) -> str:
                if not sh:
                    return "a scalar"
                return f"{sh[0]} entries" if len(sh) == 1 else f"shape {sh}"
            return f"{path}[{i}] is {describe(shape)} but {path}[0] is {describe(shapes[0])}"
    return None


def _nested_shape(x: Any) -> tuple[int, ...] | None:
    """The shape NumPy would give ``x``, or None where nested sequences are ragged."""
    if isinstance(x, (str, bytes)) or not isinstance(x, (list, tuple, np.ndarray, torch.Tensor)):
        return ()
    if isinstance(x, (np.ndarray, torch.Tensor)) and (not isinstance(x, np.ndarray) or x.dtype != object):
        return tuple(x.shape)
    inner = [_nested_shape(y) for y in x]
    if any(s is None for s in inner) or any(s != inner[0] for s in inner[1:]):
        return None
    return (len(inner), *(inner[0] if inner else ()))


def _ragged_error(name: str, data: Any) -> DataShapeError:
    detail = _ragged_detail(data) or "its nested sequences have different lengths"
    return DataShapeError(
        f"'{name}' is ragged: {detail}. Arrays crossing to the device are rectangular: pad the rows "
        f"to one length (and keep the true lengths in another array), or push each part under its own name"
    )


def to_device_array(name: str, data: Any) -> np.ndarray:
    """Convert ``data`` to a C-contiguous float32/int32 array under the dtype rules.

    Raises:
        DataShapeError: ``data`` is ragged (nested sequences of different lengths).
        DataTypeError: a dtype that cannot cross to the device.
    """
    if isinstance(data, torch.Tensor):
        data = data.detach().cpu().numpy()
    try:
        arr = np.asarray(data)
    except ValueError as err:  # NumPy >= 1.24: "setting an array element with a sequence ... inhomogeneous"
        raise _ragged_error(name, data) from err
    if arr.dtype == object and _ragged_detail(data) is not None:
        raise _ragged_error(name, data)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    elif arr.dtype == np.int64:
        if arr.size and (arr.min() < _INT32.min or arr.max() > _INT32.max):
            raise DataTypeError(f"'{name}' has int64 values outside the int32 range; rescale them")
        arr = arr.astype(np.int32)
    elif arr.dtype not in (np.float32, np.int32):
        fix = "np.int32" if arr.dtype.kind in "biu" else "np.float32"
        raise DataTypeError(
            f"'{name}' has dtype {arr.dtype}; only float32 and int32 cross to the device "
            f"(float64 and int64 are cast). Cast it with .astype({fix})"
        )
    return np.ascontiguousarray(arr)


def to_scalar(name: str, value: Any) -> np.generic:
    """Convert a Python/NumPy scalar to np.int32 or np.float32."""
    if isinstance(value, (int, np.integer, np.bool_)):  # bools become 0 / 1
        if not _INT32.min <= int(value) <= _INT32.max:
            raise DataTypeError(f"scalar '{name}'={value} does not fit in int32")
        return np.int32(value)
    if isinstance(value, (float, np.floating)):
        return np.float32(value)
    raise DataTypeError(f"'{name}' is a {type(value).__name__}; expected an array or a number")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, np.generic)) or (
        isinstance(value, np.ndarray) and value.ndim == 0
    )


class DataManager:
    """Named arrays on one device, visible to kernels and to PyTorch.

    Args (2.7.1's positional order):
        num_agents: agents per env (N).
        num_envs: env replicas (E).
        blocks_per_env: CUDA blocks per env (for more than 1024 agents).
        episode_length: steps per episode (T).

    Subclasses choose the device: :class:`CPUDataManager` and
    :class:`~warp_drive.managers.pycuda_data_manager.PyCUDADataManager`.
    """

    backend = "abstract"
    #: The torch device holding the arrays (set by each subclass before this constructor runs).
    device: torch.device

    def __init__(
        self,
        num_agents: int = 1,
        num_envs: int = 1,
        blocks_per_env: int = 1,
        episode_length: int = 1,
    ) -> None:
        self._meta_info: dict[str, np.generic] = {}
        self._host_data: dict[str, Any] = {}
        self._tensors: dict[str, torch.Tensor] = {}
        self._numpy_views: dict[str, np.ndarray] = {}
        self._torch_accessible: set[str] = set()
        self._scalar_data_list: list[str] = []
        self._reset_data_list: list[str] = []
        self._reset_target_to_pool: dict[str, str] = {}
        self._log_data_list: list[str] = []
        self._shared_constants: dict[str, Any] = {}
        self.version = 0  # bumped whenever the set of arrays changes
        self.add_meta_info(
            {
                "n_agents": positive_int("num_agents", num_agents),
                "episode_length": positive_int("episode_length", episode_length),
                "n_envs": positive_int("num_envs", num_envs),
                "blocks_per_env": positive_int("blocks_per_env", blocks_per_env),
            }
        )
        T, E = self.episode_length, self.num_envs
        self._push_array(Constants.LOG_MASK, np.zeros(T + 1, np.int32), torch_accessible=False)
        self._push_array(Constants.DONE, np.zeros(E, np.int32), torch_accessible=True)
        self._push_array(Constants.TIMESTEP, np.zeros(E, np.int32), torch_accessible=True)

    # ------------------------------------------------------------------ meta information
    @property
    def num_agents(self) -> int:
        return int(self._meta_info["n_agents"])

    @property
    def num_envs(self) -> int:
        return int(self._meta_info["n_envs"])

    @property
    def episode_length(self) -> int:
        return int(self._meta_info["episode_length"])

    @property
    def blocks_per_env(self) -> int:
        return int(self._meta_info["blocks_per_env"])

    def add_meta_info(self, meta: Mapping[str, Any]) -> None:
        """Add named scalars usable as kernel arguments through ``(name, "meta")``."""
        for name, value in meta.items():
            if name in self._meta_info:
                raise DuplicateDataError(f"meta info '{name}' already exists")
            if not _is_scalar(value):
                raise DataTypeError(f"meta info '{name}' must be a scalar, got {type(value).__name__}")
            self._meta_info[name] = to_scalar(name, value.item() if isinstance(value, np.ndarray) else value)

    def meta_info(self, name: str) -> np.generic:
        if name not in self._meta_info:
            raise DataNotFoundError(f"meta info '{name}' does not exist; known: {', '.join(self._meta_info)}")
        return self._meta_info[name]

    def add_shared_constants(self, constants: Mapping[str, Any]) -> None:
        """Host-side constants later copied into ``__constant__`` symbols of the same name."""
        for name, value in constants.items():
            if name in self._shared_constants:
                raise DuplicateDataError(f"shared constant '{name}' already exists")
            self._shared_constants[name] = to_scalar(name, value) if _is_scalar(value) else to_device_array(name, value)

    def shared_constant(self, name: str) -> Any:
        if name not in self._shared_constants:
            raise DataNotFoundError(f"shared constant '{name}' does not exist; known: {', '.join(self._shared_constants) or 'none'}")
        return self._shared_constants[name]

    # ------------------------------------------------------------------ pushing
    def push_data_to_device(self, data: Mapping[str, Any], torch_accessible: bool = False) -> None:
        """Push every entry of a :class:`DataFeed`, of a plain dict in the same layout
        (``{name: {"data": value, "attributes": {...}}}``, as 2.7.1 accepted), or of a plain
        ``{name: value}`` dict."""
        if not isinstance(data, DataFeed):
            feed = DataFeed()
            for name, value in data.items():
                if isinstance(value, Mapping) and "data" in value and set(value) <= {"data", "attributes"}:
                    feed.add_data(name, value["data"], **dict(value.get("attributes") or {}))
                else:
                    feed.add_data(name, value)
            data = feed
        for name, entry in data.items():
            attrs = entry.get("attributes", {})
            value = entry["data"]
            if name in Constants.RESERVED:
                raise DuplicateDataError(f"'{name}' is reserved by warp_drive; choose another name")
            if attrs.get("is_reset_pool", False):
                self._push_pool(name, value, attrs.get("reset_target"))
            elif _is_scalar(value):
                self._push_scalar(name, value)
            else:
                self._push_array(
                    name,
                    value,
                    torch_accessible=torch_accessible,
                    save_copy=attrs.get("save_copy_and_apply_at_reset", False),
                    log=attrs.get("log_data_across_episode", False),
                )

    def add_truncation_flag(self) -> None:
        """Create ``Constants.TRUNCATED`` (E,) int32 zeros, torch-visible, for an env whose step writes
        it (``writes_truncation``); nothing when it exists."""
        if Constants.TRUNCATED not in self._host_data:
            self._push_array(Constants.TRUNCATED, np.zeros(self.num_envs, np.int32), torch_accessible=True)

    def add_episode_index(self) -> None:
        """Create ``Constants.EPISODE`` (E,) int32 zeros, torch-visible, for an env whose kernels bind it (the
        resets advance it: :class:`~warp_drive.services.environment_reset.EnvironmentReset`); nothing when it exists."""
        if Constants.EPISODE not in self._host_data:
            self._push_array(Constants.EPISODE, np.zeros(self.num_envs, np.int32), torch_accessible=True)

    def _check_new(self, name: str) -> None:
        if name in self._host_data:
            raise DuplicateDataError(
                f"'{name}' is already on the device; push it once (use assign() to change its values)"
            )

    def _push_scalar(self, name: str, value: Any) -> None:
        self._check_new(name)
        self._host_data[name] = to_scalar(name, value.item() if isinstance(value, np.ndarray) else value)
        self._scalar_data_list.append(name)

    def _push_array(
        self,
        name: str,
        value: Any,
        torch_accessible: bool,
        save_copy: bool = False,
        log: bool = False,
    ) -> None:
        self._check_new(name)
        host = to_device_array(name, value)
        if save_copy and (host.ndim == 0 or host.shape[0] != self.num_envs):
            raise DataShapeError(
                f"'{name}' has shape {host.shape} but save_copy_and_apply_at_reset needs a leading "
                f"env axis of size num_envs={self.num_envs} (EnvWrapper adds it for env data)"
            )
        if log and (host.ndim < 2 or host.shape[:2] != (self.num_envs, self.num_agents)):
            raise DataShapeError(
                f"'{name}' has shape {host.shape}; log_data_across_episode needs "
                f"(num_envs={self.num_envs}, num_agents={self.num_agents}, ...)"
            )
        pool = self._reset_target_to_pool.get(name)
        if pool is not None:
            self._check_pool_fits(pool, self._tensors[pool], name, host)
        self._host_data[name] = host
        self._store(name, host)
        if torch_accessible:
            self._torch_accessible.add(name)
        if save_copy:
            self._reset_data_list.append(name)
            self._store(name + Constants.AT_RESET_SUFFIX, host)
        if log:
            log_name = name + Constants.LOG_SUFFIX
            log_host = np.zeros((self.episode_length + 1, *host.shape[1:]), host.dtype)
            self._host_data[log_name] = log_host
            self._store(log_name, log_host)
            self._log_data_list.append(name)
        self.version += 1

    def _push_pool(self, name: str, value: Any, target: str | None) -> None:
        if not target:
            raise ConfigError(f"reset pool '{name}' needs a reset_target")
        if target in self._reset_target_to_pool:
            raise DuplicateDataError(f"'{target}' already has the reset pool '{self._reset_target_to_pool[target]}'")
        host = to_device_array(name, value)
        if host.ndim == 0 or host.shape[0] < 2:
            raise DataShapeError(f"reset pool '{name}' has shape {host.shape}; it needs at least 2 rows")
        if target in self._tensors:
            self._check_pool_fits(name, host, target, self._tensors[target])
        self._push_array(name, host, torch_accessible=False)
        self._reset_target_to_pool[target] = name

    def _check_pool_fits(self, pool: str, pool_host: Any, target: str, target_data: Any) -> None:
        """A pool row must match one env's slot of its target in shape and dtype (the reset kernel copies its words)."""
        row_shape = tuple(pool_host.shape[1:])
        slot_shape = tuple(target_data.shape[1:])
        fix = (
            f"give the pool shape (pool_size, *{slot_shape}) and the target's dtype, or the target "
            f"(num_envs={self.num_envs}, *{row_shape})"
        )
        if row_shape != slot_shape or target_data.shape[:1] != (self.num_envs,):
            raise DataShapeError(
                f"reset pool '{pool}' has rows of shape {row_shape}, but its target '{target}' has shape "
                f"{tuple(target_data.shape)}, i.e. {slot_shape} per env; {fix}"
            )
        pool_dtype = str(pool_host.dtype).replace("torch.", "")
        target_dtype = str(target_data.dtype).replace("torch.", "")
        if pool_dtype != target_dtype:
            raise DataTypeError(f"reset pool '{pool}' is {pool_dtype} but its target '{target}' is {target_dtype}; {fix}")

    def _store(self, name: str, host: np.ndarray) -> None:
        tensor = torch.from_numpy(host.copy()).to(self.device)
        self._tensors[name] = tensor
        if tensor.device.type == "cpu":
            self._numpy_views[name] = tensor.numpy()

    # ------------------------------------------------------------------ access
    def data_on_device_via_torch(self, name: str) -> torch.Tensor:
        """The live tensor of ``name`` (writes are seen by kernels)."""
        try:
            return self._tensors[name]
        except KeyError:
            known = ", ".join(n for n in self._tensors if not n.endswith(Constants.AT_RESET_SUFFIX))
            raise DataNotFoundError(f"'{name}' is not on the device; pushed: {known}") from None

    def device_data(self, name: str) -> Any:
        """Kernel argument for ``name``: the tensor of an array, or the value of a scalar as a
        NumPy scalar (``np.int32`` / ``np.float32``), as 2.7.1 returned it."""
        if name in self._scalar_data_list:
            return self._host_data[name]
        return self.data_on_device_via_torch(name)

    def pull_data_from_device(self, name: str) -> Any:
        """A host copy of ``name`` (a NumPy array, or the scalar's value)."""
        value = self.device_data(name)
        return value.detach().cpu().numpy().copy() if isinstance(value, torch.Tensor) else value

    def assign(self, name: str, values: Any) -> None:
        """Overwrite the contents of array ``name`` in place (shape and dtype must match)."""
        t = self.data_on_device_via_torch(name)
        if isinstance(values, torch.Tensor):
            src = values
        else:
            try:
                arr = np.asarray(values)
            except ValueError as err:
                raise _ragged_error(name, values) from err
            if arr.dtype == object:
                raise _ragged_error(name, values) if _ragged_detail(values) else DataTypeError(
                    f"cannot assign values of dtype object to '{name}'; pass a numeric array"
                )
            src = torch.from_numpy(np.ascontiguousarray(arr))
        if tuple(src.shape) != tuple(t.shape):
            raise DataShapeError(f"cannot assign shape {tuple(src.shape)} to '{name}' of shape {tuple(t.shape)}")
        if src.dtype.is_floating_point != t.dtype.is_floating_point:
            raise DataTypeError(f"cannot assign {src.dtype} values to '{name}' of dtype {t.dtype}")
        t.copy_(src.to(t.device, t.dtype))

    def reset_device(self, name: str | None = None) -> None:
        """Re-upload the host values pushed originally (all arrays when ``name`` is None)."""
        for n in [name] if name else list(self._host_data):
            if n not in self._scalar_data_list:
                self.data_on_device_via_torch(n).copy_(torch.from_numpy(self._host_data[n]))

    def host_view(self) -> dict[str, Any]:
        """``{name: live NumPy view or scalar}`` plus meta info (cpu backend only)."""
        if self.device.type != "cpu":
            raise UsageError("host_view() is only available on the cpu backend; use pull_data_from_device()")
        scalars = {n: self._host_data[n] for n in self._scalar_data_list}
        return {**self._meta_info, **scalars, **self._numpy_views}

    def is_data_on_device(self, name: str) -> bool:
        return name in self._tensors or name in self._scalar_data_list

    def is_data_on_device_via_torch(self, name: str) -> bool:
        return name in self._torch_accessible

    def get_shape(self, name: str) -> tuple[int, ...]:
        if name in self._scalar_data_list:
            return ()
        return tuple(self.data_on_device_via_torch(name).shape)

    def get_dtype(self, name: str) -> str:
        if name in self._scalar_data_list:
            return str(self._host_data[name].dtype)
        return str(self.data_on_device_via_torch(name).dtype).replace("torch.", "")

    def get_reset_pool(self, name: str) -> str | None:
        """The reset pool registered for target ``name`` (None when it has none)."""
        return self._reset_target_to_pool.get(name)

    @property
    def host_data(self) -> dict[str, Any]:
        return self._host_data

    @property
    def scalar_data_list(self) -> list[str]:
        return list(self._scalar_data_list)

    @property
    def reset_data_list(self) -> list[str]:
        return list(self._reset_data_list)

    @property
    def reset_target_to_pool(self) -> dict[str, str]:
        return dict(self._reset_target_to_pool)

    @property
    def log_data_list(self) -> list[str]:
        return list(self._log_data_list)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Host copies of every array's current values (for checkpoints; saved reset copies excluded)."""
        return {n: t.detach().cpu().clone() for n, t in self._tensors.items() if not n.endswith(Constants.AT_RESET_SUFFIX)}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore values saved by :meth:`state_dict` (names must exist with the same shapes)."""
        for name, value in state.items():
            self.assign(name, value)

    def names(self) -> Iterable[str]:
        """Every array and scalar name pushed so far."""
        return list(self._host_data)


# 2.7.1's name for the base class
CUDADataManager = DataManager


class CPUDataManager(DataManager):
    """Arrays in CPU memory, shared between NumPy views (kernels) and torch tensors."""

    backend = "cpu"
    device = torch.device("cpu")
