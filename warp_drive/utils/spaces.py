"""Action and observation spaces from gymnasium or from the retired ``gym`` package.

Env classes written for WarpDrive 2.7.1 declare their spaces with ``gym.spaces``. ``gym`` is not a
dependency of warp_drive (gymnasium is), so such spaces are recognised by duck typing
(:func:`space_kind`). :func:`to_gymnasium` rebuilds the equivalent gymnasium space; the
:class:`~warp_drive.env.env_wrapper.EnvWrapper` does it once for every agent, so code downstream
(placeholders, models, samplers, interop adapters) only ever sees gymnasium spaces. Functions that
may receive a space without a wrapper in between convert it themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from warp_drive.errors import DataTypeError

#: Space kinds understood here and the attributes each must carry.
SPACE_KINDS: dict[str, tuple[str, ...]] = {
    "Discrete": ("n",),
    "MultiDiscrete": ("nvec",),
    "MultiBinary": ("n",),
    "Box": ("low", "high", "shape", "dtype"),
    "Dict": ("spaces",),
    "Tuple": ("spaces",),
}


def space_kind(space: Any) -> str | None:
    """``"Discrete"``, ``"MultiDiscrete"``, ``"MultiBinary"``, ``"Box"``, ``"Dict"``, ``"Tuple"`` or None.

    Works for gymnasium spaces, ``gym`` spaces and any look-alike whose class (or a base class) has
    one of those names and the attributes listed in :data:`SPACE_KINDS`.
    """
    for cls in type(space).__mro__:
        attrs = SPACE_KINDS.get(cls.__name__)
        if attrs is not None and all(hasattr(space, a) for a in attrs):
            return cls.__name__
    return None


def is_space(space: Any) -> bool:
    """True for a space of a kind :func:`to_gymnasium` converts."""
    return space_kind(space) is not None


def to_gymnasium(space: Any) -> spaces.Space:
    """The gymnasium equivalent of a gym or gymnasium space (gymnasium spaces are returned as is).

    Raises:
        DataTypeError: ``space`` is not a Discrete, MultiDiscrete, MultiBinary, Box, Dict or Tuple.
    """
    if isinstance(space, spaces.Space):
        return space
    kind = space_kind(space)
    if kind == "Discrete":
        return spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if kind == "MultiDiscrete":
        nvec = np.asarray(space.nvec)
        start = getattr(space, "start", None)
        return spaces.MultiDiscrete(nvec, dtype=np.int64, start=None if start is None else np.asarray(start))
    if kind == "MultiBinary":
        n = space.n
        return spaces.MultiBinary(n if isinstance(n, (int, np.integer)) else [int(v) for v in np.ravel(n)])
    if kind == "Box":
        shape = tuple(int(s) for s in space.shape)
        low = np.broadcast_to(np.asarray(space.low), shape)
        high = np.broadcast_to(np.asarray(space.high), shape)
        return spaces.Box(low=low, high=high, shape=shape, dtype=np.dtype(space.dtype))
    if kind == "Dict":
        return spaces.Dict({key: to_gymnasium(sub) for key, sub in space.spaces.items()})
    if kind == "Tuple":
        return spaces.Tuple(tuple(to_gymnasium(sub) for sub in space.spaces))
    raise DataTypeError(
        f"{space!r} ({type(space).__module__}.{type(space).__name__}) is not a space warp_drive understands; "
        f"use gymnasium.spaces (or gym.spaces) Discrete, MultiDiscrete, MultiBinary, Box, Dict or Tuple"
    )


def agent_spaces_to_gymnasium(agent_spaces: Any, what: str = "space") -> dict[Any, spaces.Space]:
    """``{agent_id: gymnasium space}`` from a per-agent mapping of gym or gymnasium spaces.

    ``agent_spaces`` may be a plain dict or a ``Dict`` space keyed by agent id (2.7.1's wrapper
    stored the observation spaces that way).

    Raises:
        DataTypeError: ``agent_spaces`` is not a mapping of agent ids to spaces.
    """
    if space_kind(agent_spaces) == "Dict":
        agent_spaces = agent_spaces.spaces
    if not isinstance(agent_spaces, Mapping):
        raise DataTypeError(
            f"the env's {what} must be a dict {{agent_id: space}}, got {type(agent_spaces).__name__}"
        )
    return {agent: to_gymnasium(space) for agent, space in agent_spaces.items()}
