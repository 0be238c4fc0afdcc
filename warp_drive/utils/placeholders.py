"""Standard step placeholders: observations, sampled_actions and rewards for all env replicas."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from gymnasium import spaces

from warp_drive.errors import DataShapeError
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed


def action_layout(space: spaces.Space) -> tuple[int, type]:
    """(number of heads, dtype) of the action placeholder for one agent's action space."""
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


def stack_agent_obs(obs: Mapping[Any, Any], agent_ids: list[Any]) -> dict[str, np.ndarray]:
    """``{placeholder name: (N, *obs_shape) float32}`` from one env's per-agent observations."""
    first = obs[agent_ids[0]]
    if isinstance(first, dict):
        out = {}
        for key in first:
            out[f"{Constants.OBSERVATIONS}_{key}"] = np.stack(
                [np.asarray(obs[a][key], np.float32).reshape(np.shape(first[key]) or (1,)) for a in agent_ids]
            )
        return out
    shapes = [np.shape(obs[a]) for a in agent_ids]
    _same(shapes, "observation shape")
    return {Constants.OBSERVATIONS: np.stack([np.asarray(obs[a], np.float32).reshape(shapes[0] or (1,)) for a in agent_ids])}


def placeholder_feed(
    obs: Mapping[Any, Any],
    action_space: Mapping[Any, spaces.Space],
    num_envs: int,
    existing: set[str],
) -> DataFeed:
    """Feed of the placeholders not already pushed (observations get a saved copy for resets)."""
    agent_ids = sorted(obs)
    feed = DataFeed()
    for name, arr in stack_agent_obs(obs, agent_ids).items():
        if name not in existing:
            feed.add_data(name, np.broadcast_to(arr, (num_envs, *arr.shape)).copy(), save_copy_and_apply_at_reset=True)
    if Constants.ACTIONS not in existing:
        layouts = [action_layout(action_space[a]) for a in agent_ids]
        heads, dtype = _same(layouts, "action layout")
        feed.add_data(Constants.ACTIONS, np.zeros((num_envs, len(agent_ids), heads), dtype))
    if Constants.REWARDS not in existing:
        feed.add_data(Constants.REWARDS, np.zeros((num_envs, len(agent_ids)), np.float32))
    return feed
