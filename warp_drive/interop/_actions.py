"""Action checks shared by the interop adapters, run before actions are pushed to the data store.

An :class:`ActionChecker` takes a ``(rows, heads)`` torch tensor of actions (the adapter's sub-envs
or agents by heads) on whatever device it lives on (NumPy input is checked on the host, CUDA
tensors on the device) and returns the tensor to push, in the store's dtype. Everything is
vectorised (a few elementwise ops); with ``invalid_actions="raise"`` a CUDA tensor costs one host
sync (the test of "any value bad"), with ``"clip"`` none.

* Discrete / MultiDiscrete: integers in ``[start, start + n - 1]`` per head. Floats that are not
  whole numbers (1.5, NaN, inf) are refused in both modes (there is no nearest action to clip
  to); whole-number floats are refused as a dtype error (cast them).
* Box: finite float values within ``[low, high]``, checked after the cast to the store's float
  dtype (what the env will read: a float64 1e300 becomes inf and is refused).

``invalid_actions="clip"`` clips out-of-range values into the space (Box: NaN becomes 0 and
+-inf the largest finite float, both then clipped to the bounds). Valid actions pass through
bit for bit in both modes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from warp_drive.errors import ConfigError, DataTypeError, InvalidActionError

#: Accepted values of the adapters' ``invalid_actions=`` option.
INVALID_ACTIONS = ("raise", "clip")
#: Bad values listed in an error message (the count of all of them is given too).
MAX_LISTED = 5
#: Longest text of one listed value or of the space in an error message.
MAX_TEXT = 80


def excerpt(text: str) -> str:
    """``text`` cut to :data:`MAX_TEXT` characters (a bounded excerpt of a value for messages)."""
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _fmt(value: float | int) -> str:
    return excerpt(f"{value:.6g}" if isinstance(value, float) else str(value))


def invalid_actions_mode(mode: Any, adapter: str) -> str:
    """``mode`` checked against :data:`INVALID_ACTIONS`.

    Raises:
        ConfigError: another value.
    """
    if mode not in INVALID_ACTIONS:
        raise ConfigError(
            f"{adapter}: invalid_actions={mode!r} is unknown; use 'raise' (refuse actions outside the action "
            "space, the default) or 'clip' (clip them into it)"
        )
    return str(mode)


def space_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(low, high, integer)`` of one agent's action space, flattened to its heads (the layout of
    :func:`~warp_drive.env.placeholders.action_layout`): inclusive bounds, int64 for Discrete and
    MultiDiscrete, float64 for Box."""
    if isinstance(space, spaces.Discrete):
        low = np.array([int(space.start)], np.int64)
        return low, low + int(space.n) - 1, True
    if isinstance(space, spaces.MultiDiscrete):
        low = np.asarray(space.start, np.int64).reshape(-1)
        return low, low + np.asarray(space.nvec, np.int64).reshape(-1) - 1, True
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, space.shape).reshape(-1).astype(np.float64)
        high = np.broadcast_to(space.high, space.shape).reshape(-1).astype(np.float64)
        return low, high, False
    raise ConfigError(f"action space {space} is not supported; use Discrete, MultiDiscrete or a flat Box")


class ActionChecker:
    """Checks (and with ``mode="clip"`` clips) the actions one adapter pushes.

    Args:
        space: the action space of one sub-env or agent (a gymnasium space).
        mode: ``"raise"`` or ``"clip"`` (the adapter's ``invalid_actions``).
        adapter: the adapter's class name, the first word of every error message.
        target_dtype: dtype of the store's ``sampled_actions`` (what :meth:`__call__` returns).

    Raises:
        ConfigError: an unknown ``mode``.
    """

    def __init__(self, space: spaces.Space, mode: str, adapter: str, target_dtype: torch.dtype) -> None:
        self.mode = invalid_actions_mode(mode, adapter)
        self.space, self.adapter, self.target_dtype = space, adapter, target_dtype
        self._low, self._high, self.integer = space_bounds(space)
        self._heads = self._low.size
        self._bounds: dict[tuple[torch.device, torch.dtype], tuple[torch.Tensor, torch.Tensor]] = {}

    def bounds(self, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """``(low, high)`` as ``(1, heads)`` tensors on ``device`` in ``dtype`` (built once per pair)."""
        key = (device, dtype)
        if key not in self._bounds:
            self._bounds[key] = tuple(torch.as_tensor(b, device=device).to(dtype).reshape(1, -1)
                                      for b in (self._low, self._high))
        return self._bounds[key]

    def __call__(self, actions: torch.Tensor, label: Callable[[int], str]) -> torch.Tensor:
        """The ``(rows, heads)`` actions to push, in ``target_dtype`` on their own device.

        Args:
            actions: one row per sub-env or agent, one column per head.
            label: names row ``i`` in messages (``"sub-env 3"``, ``"agent_2"``).

        Raises:
            InvalidActionError: values outside the space (``mode="raise"``), or non-integer values
                for a Discrete / MultiDiscrete space (either mode).
            DataTypeError: bool or complex actions, or whole-number floats for an integer space.
        """
        if actions.dtype == torch.bool or actions.is_complex():
            raise DataTypeError(
                f"{self.adapter}: actions have dtype {actions.dtype}; pass integers (Discrete, MultiDiscrete) "
                "or floats (Box)"
            )
        x = actions
        if self.integer and x.is_floating_point():
            self._refuse(~torch.isfinite(x) | (x != torch.trunc(x)), x, label, "are not integers for",
                         "Discrete and MultiDiscrete actions are whole numbers: pass integers (clipping does not "
                         "apply to non-integer values)")
            raise DataTypeError(
                f"{self.adapter}: actions are {x.dtype} but {excerpt(str(self.space))} needs integers; cast them "
                "(e.g. .long() or .astype(int))"
            )
        x = x.to(torch.int64 if self.integer else self.target_dtype)
        low, high = self.bounds(x.device, x.dtype)
        if self.mode == "clip":
            if not self.integer:
                x = torch.nan_to_num(x, nan=0.0)
            return torch.clamp(x, low, high).to(self.target_dtype)
        bad = (x < low) | (x > high)
        if not self.integer:
            bad |= ~torch.isfinite(x)
        self._refuse(bad, x, label, "lie outside",
                     "pass actions inside the action space, or build the adapter with invalid_actions='clip' "
                     "to clip them into it")
        return x.to(self.target_dtype)

    def _refuse(self, bad: torch.Tensor, x: torch.Tensor, label: Callable[[int], str], what: str, fix: str) -> None:
        """Raise InvalidActionError listing the first bad values, if any (the one host sync)."""
        if not bool(bad.any()):
            return
        where = torch.nonzero(bad)[:MAX_LISTED]
        rows, cols = where[:, 0], where[:, 1]
        values = x[rows, cols].tolist()
        entries = []
        for row, col, value in zip(rows.tolist(), cols.tolist(), values):
            head = f" {'dim' if isinstance(self.space, spaces.Box) else 'head'} {col}" if self._heads > 1 else ""
            low, high = self._low[col].item(), self._high[col].item()
            allowed = f"{low}..{high}" if self.integer else f"[{low:g}, {high:g}]"
            entries.append(f"{label(row)}{head}: {_fmt(value)} (allowed {allowed})")
        count, total = int(bad.sum()), bad.numel()
        raise InvalidActionError(
            f"{self.adapter}: {count} of {total} action values {what} {excerpt(str(self.space))}: "
            f"{'; '.join(entries)}{'; ...' if count > len(entries) else ''}. Fix: {fix}"
        )


def as_tensor(actions: Any, adapter: str) -> torch.Tensor:
    """Actions as a torch tensor: a tensor detached (its device kept), anything else through NumPy
    (on the host, zero-copy where NumPy allows).

    Raises:
        DataTypeError: actions NumPy can only hold as objects (strings, ragged lists, ...).
    """
    if isinstance(actions, torch.Tensor):
        return actions.detach()
    arr = np.asarray(actions)
    if arr.dtype.kind not in "biufc":
        raise DataTypeError(f"{adapter}: actions have dtype {arr.dtype}; pass a numeric array or tensor")
    return torch.from_numpy(np.ascontiguousarray(arr))
