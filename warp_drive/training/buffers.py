"""The on-policy rollout record: allocation, one step's recording, finalizing, batching and minibatching.

Every record is time first: ``(B, E, A, ...)`` for ``B`` env steps of ``E`` env replicas of a
policy's ``A`` agents (``(B, E)`` for per-env flags). This module and the return computation
(:meth:`~warp_drive.training.algorithms.actor_critic.a2c.A2C.compute_advantages`) are the only code that knows
that layout: the rollout, the CPU pipeline and the drivers read and write rows through the
functions and methods here (:func:`obs_row`, :func:`record_obs` and :func:`record_row` serve any
policy's record, e.g. :class:`~warp_drive.training.algorithms.transitions.TransitionBuffers`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

import torch

from warp_drive.vocab.constants import Constants
from warp_drive.vocab.done import split_done
from warp_drive.training.utils.minibatch import (index_tree, iterate_minibatches, iterate_sequence_minibatches,
                                                 slice_rows)

Tensor = torch.Tensor


def obs_row(buffers: Any, step: int, rows: slice = slice(None)) -> Any:
    """Row ``step`` (envs ``rows``) of a record's observations: a view, or a dict of views for
    Dict observations. Shapes: ``(E, A, *obs)`` (``E``: the envs of ``rows``)."""
    obs = buffers.obs
    if isinstance(obs, dict):
        return {k: v[step][rows] for k, v in obs.items()}
    return obs[step][rows]


def record_obs(buffers: Any, step: int, obs: Any, rows: slice = slice(None)) -> None:
    """Copy one step's observations ``(E, A, *obs)`` (or a dict of those) into row ``step``
    (envs ``rows``) of a record's observations."""
    dst = obs_row(buffers, step, rows)
    if isinstance(dst, dict):
        for k, v in obs.items():
            dst[k].copy_(v)
    else:
        dst.copy_(obs)


def record_row(record: Tensor, step: int, value: Tensor, rows: slice = slice(None)) -> None:
    """Copy one step's ``value`` (``(E, ...)``) into row ``step`` (envs ``rows``) of a time-first
    ``record`` (``(B, E, ...)``)."""
    record[step][rows].copy_(value)


def split_episode_ends(done_flags: Tensor, timesteps: Tensor | None, episode_length: int,
                       bootstrap_at_time_limit: bool, truncated_flags: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(done, terminated, truncated)`` bool flags from a rollout's ``_done_`` flags and timesteps
    (and ``_truncated_`` flags, for envs whose step writes them).

    An episode cut by the time limit (:func:`warp_drive.env.done.split_done`) is truncated
    (bootstrapped) when ``bootstrap_at_time_limit``, else terminated like any other end; the
    timesteps and truncation flags are read only then (None otherwise is fine).

    Shapes: every input and output (B, E).
    """
    done = done_flags > 0
    if not bootstrap_at_time_limit:
        return done, done, torch.zeros_like(done)
    terminated, truncated = split_done(done_flags, timesteps, episode_length, truncated_flags)
    return done, terminated, truncated


@dataclass
class RolloutBuffers:
    """Device tensors of one on-policy policy's rollout, time first.

    The rollout writes, per step, the observations (:func:`record_obs`), actions, log-probabilities
    (the sampler kernel writes :meth:`log_probs_row` in place), values and, when bootstrapping at
    time limits, the next values; :meth:`SharedBuffers.finalize` writes rewards and the episode-end
    flags, the policy's ``finalize`` the advantages and returns.

    A recurrent policy's record also keeps what its update needs to run the sequences again
    (:mod:`warp_drive.training.carried_state`): the carried state at the rollout's first step and the steps
    whose state was reset; both are None for any other policy.

    Shapes:
        obs: ``(B, E, A, *obs)`` (or a dict of those); actions: (B, E, A, columns);
        log_probs, values, rewards, next_values, advantages, returns: (B, E, A);
        terminated, truncated: (B, E); start_state: ``(E, A, *S)``; episode_starts: (B, E, A) bool.
    """

    obs: Any
    actions: Tensor
    log_probs: Tensor
    values: Tensor
    rewards: Tensor
    next_values: Tensor
    terminated: Tensor
    truncated: Tensor
    advantages: Tensor
    returns: Tensor
    start_state: Tensor | None = None
    episode_starts: Tensor | None = None
    #: (B, E, A) bool, each agent's active flag right after each step (before resets), for a policy that masks
    #: inactive agents (warp_drive/training/agent_masks.py; :meth:`SharedBuffers.finalize` fills it); else None
    active_after: Tensor | None = None

    @classmethod
    def allocate(cls, steps: int, obs_example: Any, num_agents: int, columns: int, action_dtype: torch.dtype,
                 state_example: Tensor | None = None) -> "RolloutBuffers":
        """Rows for ``steps`` env steps; ``obs_example``: one step's ``(E, A, *obs)`` observations
        (or a dict of those); ``state_example``: a recurrent policy's ``(E, A, *S)`` carried state (None: the
        record keeps none)."""
        def like(x: Tensor) -> Tensor:
            return torch.empty((steps, *x.shape), dtype=x.dtype, device=x.device)

        obs = {k: like(v) for k, v in obs_example.items()} if isinstance(obs_example, dict) else like(obs_example)
        ref = next(iter(obs_example.values())) if isinstance(obs_example, dict) else obs_example
        E, dev = ref.shape[0], ref.device
        f = lambda: torch.zeros((steps, E, num_agents), dtype=torch.float32, device=dev)  # noqa: E731
        flags = lambda: torch.zeros((steps, E), dtype=torch.bool, device=dev)  # noqa: E731
        buffers = cls(obs, torch.zeros((steps, E, num_agents, columns), dtype=action_dtype, device=dev), f(), f(), f(),
                      f(), flags(), flags(), f(), f())
        if state_example is not None:
            buffers.start_state = torch.zeros_like(state_example)
            buffers.episode_starts = torch.zeros((steps, E, num_agents), dtype=torch.bool, device=dev)
        return buffers

    def log_probs_row(self, step: int, rows: slice = slice(None)) -> Tensor:
        """Row ``step`` (envs ``rows``) of the log-probabilities, (E, A): the sampler writes it."""
        return self.log_probs[step][rows]

    def record_step(self, step: int, actions: Tensor | None, values: Tensor, rows: slice = slice(None)) -> None:
        """One step's actions (E, A, columns) (None: recorded for all agents at once by
        :class:`SharedBuffers`) and values (E, A) into row ``step`` (envs ``rows``)."""
        if actions is not None:
            self.actions[step][rows].copy_(actions)
        self.values[step][rows].copy_(values)

    def record_next_values(self, step: int, values: Tensor, rows: slice = slice(None)) -> None:
        """The values (E, A) of the observations right after step ``step``, before resets."""
        self.next_values[step][rows].copy_(values)

    def batch(self) -> "RolloutBatch":
        """What an actor-critic update trains on (views of these buffers)."""
        return RolloutBatch(self.obs, self.actions, self.advantages, self.returns, self.log_probs, self.values,
                            self.start_state, self.episode_starts)


@dataclass(eq=False)
class RolloutBatch:
    """An actor-critic policy's training batch; read by key too (``batch["obs"]``, ``keys()``,
    ``items()``, ``get()``, ``dict(batch)``: the fields that are not None).

    A plain dataclass, not a :class:`~collections.abc.Mapping`, so that collection walkers (e.g.
    Lightning's batch transfer) rebuild it field by field as a ``RolloutBatch``.

    Shapes: obs ``(B, E, A, *obs)`` (or a dict of those); actions (B, E, A, columns); advantages,
    returns, old_log_probs, old_values (B, E, A). A minibatch (:meth:`minibatches`) has the time
    and env axes merged into one sample axis: ``(M, A, ...)``. A recurrent policy's batch also has
    start_state ``(E, A, *S)`` and episode_starts (B, E, A); its minibatches hold whole env x agent
    sequences, sequence first: ``(M, B, ...)``, start_state ``(M, *S)``
    (:func:`~warp_drive.training.utils.minibatch.iterate_sequence_minibatches`).
    """

    obs: Any
    actions: Tensor
    advantages: Tensor
    returns: Tensor
    old_log_probs: Tensor | None = None
    old_values: Tensor | None = None
    start_state: Tensor | None = None
    episode_starts: Tensor | None = None

    @classmethod
    def of(cls, batch: Any) -> "RolloutBatch":
        """``batch`` itself, or a mapping with (at least) obs, actions, advantages and returns as a batch."""
        if isinstance(batch, RolloutBatch):
            return batch
        return cls(**{f.name: batch[f.name] for f in fields(cls) if f.name in batch})

    def keys(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, getattr(self, k)) for k in self.keys()]

    def values(self) -> list[Any]:
        return [v for _, v in self.items()]

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.keys() else default

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def env_subset(self, envs: Tensor) -> "RolloutBatch":
        """The batch of envs ``envs`` (a long index of the env axis) only."""
        fields_ = dict(self)
        start = fields_.pop("start_state", None)  # (E, A, *S): its env axis is the first
        subset = index_tree(fields_, envs, dim=1)
        if start is not None:
            subset["start_state"] = start.index_select(0, envs)
        return RolloutBatch.of(subset)

    def rows(self, start: int, stop: int) -> "RolloutBatch":
        """Samples ``start:stop`` (first axis) of a minibatch: views, no copies."""
        return RolloutBatch.of(slice_rows(dict(self), start, stop))

    def minibatches(self, num_minibatches: int, generator: torch.Generator | None = None) -> Iterator["RolloutBatch"]:
        """Shuffled minibatches over the (time, env) samples (every agent of a sample stays
        together); ``num_minibatches`` must divide ``B * E``. One minibatch: the whole batch, flat.
        A recurrent policy's batch (with ``start_state``): minibatches of whole env x agent sequences;
        ``num_minibatches`` must divide ``E * A``."""
        iterate = iterate_minibatches if self.start_state is None else iterate_sequence_minibatches
        for mb in iterate(dict(self), num_minibatches, generator=generator):
            yield RolloutBatch.of(mb)


def batch_env_subset(batch: Any, envs: Tensor) -> Any:
    """Envs ``envs`` (a long index of the env axis) of a time-first training batch: a
    :class:`RolloutBatch`'s :meth:`~RolloutBatch.env_subset`, else every tensor's axis 1."""
    if isinstance(batch, RolloutBatch):
        return batch.env_subset(envs)
    return index_tree(batch, envs, dim=1)


class SharedBuffers:
    """Per-step arrays every policy reads: done flags, timesteps and all agents' rewards (and actions).

    Args:
        steps: rows (env steps) of every array.
        dm: the data manager whose placeholders are recorded.
        time_limits: keep timesteps and (envs whose step writes ``_truncated_``) truncation flags,
            which only bootstrapping at time limits reads; False: both are None and not recorded.
        joint_actions: keep every agent's actions (the joint ``sampled_actions`` placeholder) once
            per step, for policies that sample into placeholders of their own: one copy per step
            instead of one per policy (:meth:`finalize` picks each policy's agents).

    Shapes: done, timestep, truncated: (B, E) int32 (truncated: None unless the env's step writes
    ``_truncated_``); rewards: (B, E, N) float32; actions: (B, E, N, columns) or None.
    """

    def __init__(self, steps: int, dm: Any, time_limits: bool = True, joint_actions: bool = False) -> None:
        done = dm.data_on_device_via_torch(Constants.DONE)
        rewards = dm.data_on_device_via_torch(Constants.REWARDS)
        self.done = torch.zeros((steps, *done.shape), dtype=done.dtype, device=done.device)
        self.timestep = torch.zeros_like(self.done) if time_limits else None
        writes_truncated = time_limits and dm.is_data_on_device(Constants.TRUNCATED)
        self.truncated = torch.zeros_like(self.done) if writes_truncated else None
        self.rewards = torch.zeros((steps, *rewards.shape), dtype=rewards.dtype, device=rewards.device)
        self.actions: Tensor | None = None
        #: (B, E, N) bool: the env's ``active`` flags right after each step, where it declares them
        self.active = (torch.zeros(self.rewards.shape, dtype=torch.bool, device=rewards.device)
                       if dm.is_data_on_device(Constants.ACTIVE) and dm.get_shape(Constants.ACTIVE) == tuple(rewards.shape)
                       else None)
        if joint_actions:
            actions = dm.data_on_device_via_torch(Constants.ACTIONS)
            self.actions = torch.zeros((steps, *actions.shape), dtype=actions.dtype, device=actions.device)

    def env_columns(self, lo: int, hi: int) -> "SharedBuffers":
        """These buffers seen through envs ``lo:hi``: a copy whose arrays are views of those envs'
        columns (its :meth:`record` fills them)."""
        view = object.__new__(SharedBuffers)
        for name, value in vars(self).items():
            setattr(view, name, value[:, lo:hi] if isinstance(value, Tensor) else value)
        return view

    def record(self, step: int, dm: Any) -> Tensor:
        """Copy the env's done flags, timesteps and rewards after a step into row ``step``; returns
        the done flags (E,)."""
        done = dm.data_on_device_via_torch(Constants.DONE)
        self.done[step].copy_(done)
        if self.timestep is not None:
            self.timestep[step].copy_(dm.data_on_device_via_torch(Constants.TIMESTEP))
        if self.truncated is not None:
            self.truncated[step].copy_(dm.data_on_device_via_torch(Constants.TRUNCATED))
        self.rewards[step].copy_(dm.data_on_device_via_torch(Constants.REWARDS))
        if self.active is not None:
            self.active[step].copy_(dm.data_on_device_via_torch(Constants.ACTIVE))  # nonzero -> True
        return done

    def record_actions(self, step: int, dm: Any) -> None:
        """Copy every agent's sampled actions into row ``step`` (with ``joint_actions``)."""
        self.actions[step].copy_(dm.data_on_device_via_torch(Constants.ACTIONS))

    def envs_ending(self, flag: int) -> Tensor:
        """(E,) bool: the envs where some step of the rollout set the done flag ``flag`` (e.g. 2, a success)."""
        return (self.done == flag).any(0)

    def finalize(self, policies: Iterable[Any], ends: tuple[Tensor, Tensor, Tensor], last_values: Mapping[str, Any],
                 bootstrap: bool) -> None:
        """After the last step: every policy's rewards (and actions, when recorded here for all
        agents at once), termination/truncation flags and episode statistics, then every trained
        policy's ``finalize`` (advantages, targets, replay pushes) with ``last_values[tag]``, the
        values after the last step. ``ends``: ``(done, terminated, truncated)``
        (:func:`split_episode_ends`), each (B, E)."""
        done, terminated, truncated = ends
        for p in policies:
            b = p.buffers
            b.rewards.copy_(self.rewards if p.contiguous_all else self.rewards.index_select(2, p.agent_index))
            if self.actions is not None:
                torch.index_select(self.actions, 2, p.agent_index, out=b.actions)
            b.terminated.copy_(terminated)
            b.truncated.copy_(truncated)
            if getattr(b, "active_after", None) is not None and self.active is not None:  # agent_masks.py
                torch.index_select(self.active, 2, p.agent_index, out=b.active_after)
            p.stats.update_from_batch(b.rewards, done)
            if p.to_train:
                p.finalize(last_values[p.tag], bootstrap)
