"""Checks of an env's reset observations against its declared observation spaces.

:class:`~warp_drive.env.env_wrapper.EnvWrapper` runs :func:`check_reset_observations` on the host reset
every replica starts from (before anything is compiled or pushed), and the interop adapters run it
on every start state they draw later; a bad observation fails there with a typed error naming the
agent, the element and the fix, instead of as a NumPy error at the first step.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from gymnasium import spaces

from warp_drive.errors import DataShapeError, DataTypeError, SpaceMismatchError


def check_reset_observations(obs: Mapping[Any, Any], observation_space: Mapping[Any, Any], env_name: str) -> None:
    """Check one env's reset observations ``{agent_id: obs}`` against ``{agent_id: space}`` before
    they are pushed: every agent of the space has an observation, of the space's shape (a scalar
    counts as shape (1,)), numeric, rectangular, and inside the space (Box bounds, NaN refused;
    Discrete / MultiDiscrete through ``contains``). Dict observations are checked key by key.

    Raises:
        DataShapeError: an agent is missing or unknown, an observation is ragged or has the wrong shape.
        DataTypeError: an observation is not numeric.
        SpaceMismatchError: an observation lies outside its space.
    """
    missing = [a for a in observation_space if a not in obs]
    extra = [a for a in obs if a not in observation_space]
    if missing or extra:
        raise DataShapeError(
            f"{env_name}: reset() returned observations for agents {sorted(obs, key=str)[:10]}, but "
            f"observation_space has agents {sorted(observation_space, key=str)[:10]} (missing: {missing[:10]}, "
            f"unknown: {extra[:10]}); return one observation per agent of observation_space"
        )
    groups: dict[int, tuple[Any, list[Any]]] = {}
    for agent, space in observation_space.items():
        groups.setdefault(id(space), (space, []))[1].append(agent)
    for space, agents in groups.values():
        if isinstance(space, spaces.Dict):
            for key, sub in space.spaces.items():
                rows = {}
                for a in agents:
                    if not isinstance(obs[a], Mapping) or key not in obs[a]:
                        raise DataShapeError(
                            f"{env_name}: reset observation of agent {a!r} has no key {key!r} of its Dict "
                            f"observation_space; return a dict with the keys {list(space.spaces)}"
                        )
                    rows[a] = obs[a][key]
                _check_obs_group(rows, sub, agents, env_name, f" key {key!r}")
        else:
            _check_obs_group({a: obs[a] for a in agents}, space, agents, env_name, "")


def _check_obs_group(values: Mapping[Any, Any], space: Any, agents: list[Any], env_name: str, what: str) -> None:
    """Agents sharing one space: shapes one by one, then the values of a chunk of them at once."""
    if not isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        return
    chunk = max(1, (1 << 22) // max(1, int(np.prod(space.shape))))  # temporaries: ~16 MB of float32 a chunk
    for start in range(0, len(agents), chunk):
        _check_obs_chunk(values, space, agents[start : start + chunk], env_name, what)


def _check_obs_chunk(values: Mapping[Any, Any], space: Any, agents: list[Any], env_name: str, what: str) -> None:
    shape = tuple(space.shape)
    rows = []
    for a in agents:
        where = f"{env_name}: reset observation{what} of agent {a!r}"
        try:
            arr = np.asarray(values[a])
        except ValueError as err:
            raise DataShapeError(f"{where} is ragged ({err}); return a rectangular array of shape {shape}") from err
        if arr.dtype == object:
            raise DataShapeError(f"{where} is ragged or holds Python objects; return a numeric array of shape {shape}")
        if arr.dtype.kind not in "biuf":
            raise DataTypeError(f"{where} has dtype {arr.dtype}; return numbers (float32) of shape {shape}")
        if arr.shape != shape and not (arr.shape == () and shape == (1,)):
            raise DataShapeError(
                f"{where} has shape {arr.shape}, but its observation_space {space} has shape {shape}; "
                f"return observations of the space's shape or fix observation_space"
            )
        rows.append(arr.reshape(shape))
    stacked = np.stack(rows)
    if isinstance(space, spaces.Box):
        values32 = stacked.astype(np.float32)  # what the data store holds
        bad = np.isnan(values32) | (values32 < space.low) | (values32 > space.high)
        if bad.any():
            k, *idx = (int(i) for i in np.argwhere(bad)[0])
            index = tuple(idx)
            low, high = space.low[index], space.high[index]
            raise SpaceMismatchError(
                f"{env_name}: reset observation{what} of agent {agents[k]!r} lies outside its observation_space: "
                f"element {index} is {values32[(k, *index)].item()}, the space allows [{low}, {high}]; "
                f"fix reset() or widen the Box's low/high"
            )
        return
    for k, a in enumerate(agents):
        if not space.contains(stacked[k].astype(space.dtype)):
            raise SpaceMismatchError(
                f"{env_name}: reset observation{what} of agent {a!r} is {stacked[k].tolist()}, outside its "
                f"observation_space {space}; fix reset() or the space"
            )
