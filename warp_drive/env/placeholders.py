"""Step placeholders (observations, sampled_actions, rewards).

:class:`~warp_drive.env.env_wrapper.EnvWrapper` pushes the step placeholders itself at the first
``reset_all_envs()`` (:func:`placeholder_feed`), so an env's kernel finds them before its first
step. 2.7.1's training placeholders are :mod:`warp_drive.compat271.data_loader`'s.

Layouts (E = num_envs, A = agents in the group, H = action heads)::

    observations[_<policy>][_<key>]        (E, A, *obs_shape) float32, saved copy for resets
                                           ((E, *obs_shape, A) with obs_dim_corresponding_to_num_agents="last")
    sampled_actions[_<policy>]             (E, A, H) int32 (Discrete: H = 1; MultiDiscrete) or float32 (Box)
    sampled_actions_<i>[_<policy>]         (E, A, 1), one per head of a MultiDiscrete or a Box with d > 1
    rewards[_<policy>]                     (E, A) float32

(``_<policy>``: the per-policy placeholders of 2.7.1's loader.)
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.vocab.constants import Constants
from warp_drive.vocab.data_feed import DataFeed
from warp_drive.utils.spaces import to_gymnasium

AGENT_AXES = ("first", "last")


def action_layout(space: Any) -> tuple[int, type]:
    """(number of heads, dtype) of the action placeholder for one agent's action space
    (a gymnasium space, or a ``gym`` one recognised by duck typing)."""
    space = to_gymnasium(space)
    if isinstance(space, spaces.Discrete):
        return 1, np.int32
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.prod(space.nvec.shape)), np.int32
    if isinstance(space, spaces.Box):
        return int(np.prod(space.shape)), np.float32
    raise DataShapeError(
        f"action space {space} is not supported; use Discrete, MultiDiscrete or a flat Box"
    )


def _same(values: list[Any], what: str) -> Any:
    first = values[0]
    for v in values[1:]:
        if v != first:
            raise DataShapeError(
                f"all agents must share one {what} for the shared placeholders; got {first} and {v}"
            )
    return first


def get_obs(
    obs: Mapping[Any, Any],
    agent_ids: Sequence[Any],
    obs_dim_corresponding_to_num_agents: str = "first",
    obs_key: str | None = None,
) -> np.ndarray:
    """One env's observations of ``agent_ids`` stacked along the agent axis (2.7.1's helper).

    Returns ``(A, *obs_shape)``, or ``(*obs_shape, A)`` when ``obs_dim_corresponding_to_num_agents``
    is ``"last"`` and there are several agents (the first and last axes are swapped). ``obs_key``
    picks one key of dict observations.
    """
    check_agent_axis(obs_dim_corresponding_to_num_agents)
    stacked = np.array([obs[a] if obs_key is None else obs[a][obs_key] for a in agent_ids])
    if obs_dim_corresponding_to_num_agents == "last" and len(agent_ids) > 1:
        return np.swapaxes(stacked, 0, -1)
    return stacked


def check_agent_axis(axis: str) -> None:
    """Raise ConfigError unless ``axis`` is one of :data:`AGENT_AXES`."""
    if axis not in AGENT_AXES:
        raise ConfigError(f"obs_dim_corresponding_to_num_agents={axis!r} is unknown; use 'first' or 'last'")


def stack_agent_obs(
    obs: Mapping[Any, Any], agent_ids: Sequence[Any], obs_dim_corresponding_to_num_agents: str = "first", suffix: str = ""
) -> dict[str, np.ndarray]:
    """``{placeholder name: (A, *obs_shape) float32}`` from one env's per-agent observations
    (``observations<suffix>``, or ``observations<suffix>_<key>`` per key of dict observations)."""
    agent_ids = list(agent_ids)
    first = obs[agent_ids[0]]

    def stack(values: Mapping[Any, Any], what: str) -> np.ndarray:  # one shape for all (scalars: (1,))
        shapes = [np.shape(values[a]) or (1,) for a in agent_ids]
        _same(shapes, what)
        rows = {a: np.asarray(values[a], np.float32).reshape(shapes[0]) for a in agent_ids}
        return get_obs(rows, agent_ids, obs_dim_corresponding_to_num_agents).astype(np.float32)

    if isinstance(first, Mapping):
        return {f"{Constants.OBSERVATIONS}{suffix}_{key}": stack({a: obs[a][key] for a in agent_ids},
                                                                 f"shape of observation '{key}'") for key in first}
    return {f"{Constants.OBSERVATIONS}{suffix}": stack(obs, "observation shape")}


def placeholder_feed(
    obs: Mapping[Any, Any],
    action_space: Mapping[Any, Any],
    num_envs: int,
    existing: set[str],
) -> DataFeed:
    """Feed of the step placeholders not already pushed (observations get a saved copy for resets)."""
    agent_ids = sorted(obs)
    feed = DataFeed()
    for name, arr in stack_agent_obs(obs, agent_ids).items():
        if name not in existing:
            feed.add_data(name, np.broadcast_to(arr, (num_envs, *arr.shape)).copy(), save_copy_and_apply_at_reset=True)
    if Constants.ACTIONS not in existing:
        heads, dtype = _same([action_layout(action_space[a]) for a in agent_ids], "action layout")
        feed.add_data(Constants.ACTIONS, np.zeros((num_envs, len(agent_ids), heads), dtype))
    if Constants.REWARDS not in existing:
        feed.add_data(Constants.REWARDS, np.zeros((num_envs, len(agent_ids)), np.float32))
    return feed
