"""WarpDrive 2.7.1's training placeholders: ``create_and_push_data_placeholders`` and its helpers.

2.7.1's trainer and consistency checker pushed, besides the step placeholders the
:class:`~warp_drive.env.env_wrapper.EnvWrapper` pushes itself (:mod:`warp_drive.env.placeholders`),
per-head action arrays, per-policy placeholders and rollout batch arrays, and registered the
actions with a sampler. :func:`create_and_push_data_placeholders` does the same (2.7.1's import
path: ``warp_drive.training.utils.data_loader``), accepting what the wrapper already pushed in 2.7.1's shape.

Layouts (E = num_envs, A = agents in the group, H = action heads, B = rollout length); the step
placeholders are those of :mod:`warp_drive.env.placeholders`, suffixed ``_<policy>`` with
per-policy placeholders::

    processed_observations_batch_<policy>  (B, E, A_p, flat_obs) float32   (B > 1 only)
    sampled_actions_batch_<policy>         (B, E, A_p, H)
    rewards_batch_<policy>                 (B, E, A_p) float32
    done_flags_batch                       (B, E) int32
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from warp_drive.vocab.constants import Constants
from warp_drive.vocab.data_feed import DataFeed
from warp_drive.env.placeholders import action_layout, check_agent_axis, stack_agent_obs
from warp_drive.errors import ConfigError, DataShapeError, DataTypeError
from warp_drive.utils.spaces import space_kind, to_gymnasium

logger = logging.getLogger(__name__)


def get_flattened_obs_size(observation_space: Any) -> int:
    """Width of one agent's observation once flattened: the Box size, or the summed sizes of a
    Dict's entries other than ``action_mask`` (2.7.1's helper)."""
    kind = space_kind(observation_space)
    if kind == "Box":
        return int(np.prod(observation_space.shape))
    if kind == "Dict":
        return int(sum(np.prod(sub.shape) for key, sub in observation_space.spaces.items() if key != Constants.ACTION_MASK))
    raise DataTypeError(f"observation space {observation_space!r} is not a Box or a Dict; flatten it in the env")


def validate_policy_tag_to_agent_id_map(
    agent_ids: Sequence[Any], policy_tag_to_agent_id_map: Mapping[str, Sequence[Any]] | None
) -> dict[str, list[Any]]:
    """The policy map, checked: every agent in exactly one policy. None -> ``{"shared": all agents}``.

    Raises:
        ConfigError: an agent is in two policies or in none, an id is unknown, or a policy is empty.
    """
    agents = sorted(agent_ids)
    if policy_tag_to_agent_id_map is None:
        return {"shared": agents}
    if not isinstance(policy_tag_to_agent_id_map, Mapping) or not policy_tag_to_agent_id_map:
        raise ConfigError(
            f"policy_tag_to_agent_id_map must be a non-empty dict {{policy: [agent ids]}}, got {policy_tag_to_agent_id_map!r}"
        )
    owner: dict[Any, str] = {}
    out: dict[str, list[Any]] = {}
    for tag, ids in policy_tag_to_agent_id_map.items():
        if isinstance(ids, (str, bytes)) or not isinstance(ids, (Sequence, np.ndarray)) or len(ids) == 0:
            raise ConfigError(f"policy '{tag}' must map to a non-empty list of agent ids, got {ids!r}")
        out[tag] = []
        for a in ids:
            a = a.item() if isinstance(a, np.generic) else a
            if a not in agents:
                raise ConfigError(f"policy '{tag}' lists agent {a!r}, which the env does not have (agents: {agents})")
            if a in owner:
                raise ConfigError(f"agent {a!r} is mapped to two policies ('{owner[a]}' and '{tag}'); map it to one")
            owner[a] = tag
            out[tag].append(a)
    missing = [a for a in agents if a not in owner]
    if missing:
        raise ConfigError(f"agents {missing} are not mapped to any policy; add them to policy_tag_to_agent_id_map")
    return out


def _check_same_spaces(env: Any, agent_ids: Sequence[Any], group: str) -> None:
    """All agents of one placeholder group share observation and action spaces (kind and shape)."""
    def signature(space: Any) -> Any:
        space = to_gymnasium(space)
        if isinstance(space, spaces.Dict):
            return ("Dict", tuple((k, getattr(s, "shape", None)) for k, s in space.spaces.items()))
        if isinstance(space, spaces.Discrete):
            return ("Discrete", int(space.n))
        if isinstance(space, spaces.MultiDiscrete):
            return ("MultiDiscrete", tuple(int(n) for n in space.nvec.ravel()))
        return (type(space).__name__, getattr(space, "shape", None))

    for what in ("observation_space", "action_space"):
        table = getattr(env, what, None)
        if table is None:
            continue
        sigs = {a: signature(table[a]) for a in agent_ids}
        first = sigs[agent_ids[0]]
        for a, sig in sigs.items():
            if sig != first:
                raise DataShapeError(
                    f"agents {agent_ids[0]!r} and {a!r} of {group} have different {what}s ({first} vs {sig}); "
                    f"they cannot share one placeholder: use one policy per space with "
                    f"create_separate_placeholders_for_each_policy=True"
                )


def _add_or_accept(dm: Any, feed: DataFeed, name: str, value: np.ndarray, **attrs: Any) -> None:
    """Queue ``name`` for pushing, or accept the array already there when its shape and dtype match."""
    if dm.is_data_on_device(name):
        shape, dtype = tuple(dm.get_shape(name)), dm.get_dtype(name)
        if shape != tuple(value.shape) or np.dtype(dtype) != value.dtype:
            raise DataShapeError(
                f"'{name}' is already on the device with shape {shape} and dtype {dtype}; the placeholder needs "
                f"{tuple(value.shape)} {value.dtype}. Push it with that layout (or not at all: the wrapper and "
                f"this function create it)"
            )
        return
    feed.add_data(name, value, **attrs)


def _action_arrays(space: Any, num_envs: int, num_agents: int, suffix: str) -> dict[str, np.ndarray]:
    heads, dtype = action_layout(space)
    out = {}
    if heads > 1 or space_kind(space) == "MultiDiscrete":
        for i in range(heads):
            out[f"{Constants.ACTIONS}_{i}{suffix}"] = np.zeros((num_envs, num_agents, 1), dtype)
    out[f"{Constants.ACTIONS}{suffix}"] = np.zeros((num_envs, num_agents, heads), dtype)
    return out


def _register_actions(sampler: Any, dm: Any, space: Any, suffix: str) -> None:
    space = to_gymnasium(space)
    if isinstance(space, spaces.Discrete):
        sampler.register_actions(dm, f"{Constants.ACTIONS}{suffix}", int(space.n), is_deterministic=False)
    elif isinstance(space, spaces.MultiDiscrete):
        for i, n in enumerate(space.nvec.ravel()):
            sampler.register_actions(dm, f"{Constants.ACTIONS}_{i}{suffix}", int(n), is_deterministic=False)
    else:
        heads, _ = action_layout(space)
        names = [f"{Constants.ACTIONS}{suffix}"] if heads == 1 else [f"{Constants.ACTIONS}_{i}{suffix}" for i in range(heads)]
        for name in names:
            sampler.register_actions(dm, name, 1, is_deterministic=True)


def create_and_push_data_placeholders(
    env_wrapper: Any = None,
    action_sampler: Any = None,
    policy_tag_to_agent_id_map: Mapping[str, Sequence[Any]] | None = None,
    create_separate_placeholders_for_each_policy: bool = False,
    obs_dim_corresponding_to_num_agents: str = "first",
    training_batch_size_per_env: int | None = None,
    push_data_batch_placeholders: bool = True,
) -> None:
    """Push the placeholders 2.7.1's trainer and consistency checker expect (see the module docstring).

    Args:
        env_wrapper: an :class:`~warp_drive.env.env_wrapper.EnvWrapper` with a data store (pycuda, or
            an env with a vectorised NumPy step on the cpu backend). Its first reset is done here
            when it has not happened yet.
        action_sampler: a :class:`~warp_drive.services.sampler.Sampler` to register the action
            placeholders with (categorical heads; a Box registers Gaussian heads).
        policy_tag_to_agent_id_map: ``{policy: [agent ids]}``; None: one policy "shared".
        create_separate_placeholders_for_each_policy: one set of step placeholders per policy
            (names suffixed ``_<policy>``), for steps written to fill them (needs >= 2 policies).
        obs_dim_corresponding_to_num_agents: "first" (E, A, ...) or "last" (E, ..., A); "last"
            only applies to per-policy placeholders (the wrapper's own ``observations`` is agent-first).
        training_batch_size_per_env: rollout length B of the batch arrays.
        push_data_batch_placeholders: also push the actions/rewards/done batch arrays (needs B).

    Raises:
        ConfigError: no data store, a bad policy map or flag, or a missing batch size.
        DataShapeError: agents sharing a placeholder have different spaces, or an array of the
            same name exists with another layout.
    """
    if env_wrapper is None:
        raise ConfigError("create_and_push_data_placeholders() needs env_wrapper=")
    dm = getattr(env_wrapper, "cuda_data_manager", None)
    if dm is None:
        raise ConfigError(
            f"{type(env_wrapper.env).__name__} runs gym style on the cpu backend (no numpy_step), so there is no data "
            f"store to hold placeholders; use env_backend='pycuda'"
        )
    check_agent_axis(obs_dim_corresponding_to_num_agents)
    if push_data_batch_placeholders and not (
        isinstance(training_batch_size_per_env, (int, np.integer)) and training_batch_size_per_env > 0
    ):
        raise ConfigError(
            f"push_data_batch_placeholders=True needs training_batch_size_per_env > 0, got "
            f"{training_batch_size_per_env!r}; pass it (train_batch_size // num_envs) or push_data_batch_placeholders=False"
        )
    if getattr(env_wrapper, "reset_on_host", False):
        env_wrapper.reset_all_envs()
    env = env_wrapper.env
    obs = getattr(env_wrapper, "reset_observations", None) or env_wrapper.env.reset()
    policy_map = validate_policy_tag_to_agent_id_map(list(obs), policy_tag_to_agent_id_map)
    num_envs = int(env_wrapper.n_envs)

    if create_separate_placeholders_for_each_policy:
        if len(policy_map) < 2:
            raise ConfigError(
                "create_separate_placeholders_for_each_policy=True needs at least two policies in "
                "policy_tag_to_agent_id_map; with one policy the shared placeholders are used"
            )
        groups = [(f"_{tag}", ids) for tag, ids in policy_map.items()]
    else:
        if obs_dim_corresponding_to_num_agents == "last" and len(obs) > 1:
            raise ConfigError(
                "obs_dim_corresponding_to_num_agents='last' cannot apply to the shared 'observations' placeholder: "
                "EnvWrapper pushes it agent-first (num_envs, num_agents, ...). Write the step for that layout, "
                "or use per-policy placeholders (create_separate_placeholders_for_each_policy=True)"
            )
        groups = [("", sorted(obs))]

    for suffix, ids in groups:
        group = f"policy '{suffix[1:]}'" if suffix else "the shared placeholders"
        _check_same_spaces(env, ids, group)
        feed = DataFeed()
        for name, arr in stack_agent_obs(obs, ids, obs_dim_corresponding_to_num_agents, suffix).items():
            stacked = np.broadcast_to(arr, (num_envs, *arr.shape)).copy()
            _add_or_accept(dm, feed, name, stacked, save_copy_and_apply_at_reset=True)
        space = env.action_space[ids[0]]
        for name, arr in _action_arrays(space, num_envs, len(ids), suffix).items():
            _add_or_accept(dm, feed, name, arr)
        _add_or_accept(dm, feed, f"{Constants.REWARDS}{suffix}", np.zeros((num_envs, len(ids)), np.float32))
        dm.push_data_to_device(feed, torch_accessible=True)
        if action_sampler is not None:
            _register_actions(action_sampler, dm, space, suffix)

    batch = training_batch_size_per_env
    feed = DataFeed()
    for tag, ids in policy_map.items():
        if batch is not None and batch > 1:
            width = get_flattened_obs_size(to_gymnasium(env.observation_space[ids[0]]))
            name = f"{Constants.PROCESSED_OBSERVATIONS}_batch_{tag}"
            _add_or_accept(dm, feed, name, np.zeros((batch, num_envs, len(ids), width), np.float32))
        if push_data_batch_placeholders:
            heads, dtype = action_layout(env.action_space[ids[0]])
            _add_or_accept(dm, feed, f"{Constants.ACTIONS}_batch_{tag}", np.zeros((batch, num_envs, len(ids), heads), dtype))
            _add_or_accept(dm, feed, f"{Constants.REWARDS}_batch_{tag}", np.zeros((batch, num_envs, len(ids)), np.float32))
    if push_data_batch_placeholders:
        _add_or_accept(dm, feed, f"{Constants.DONE_FLAGS}_batch", np.zeros((batch, num_envs), np.int32))
    dm.push_data_to_device(feed, torch_accessible=True)
    for tag, ids in policy_map.items():
        logger.info("policy %s: agents %s, observation space %s, action space %s", tag, ids,
                    env.observation_space[ids[0]], env.action_space[ids[0]])
