"""On-device rollout: policy forward, in-kernel sampling, env step and resets, without host syncs.

One step, for every env replica at once, in one of two orders that give the same rollout buffers
(``tests/cpu/training/test_rollout_order.py``):

**Reset first** (``trainer.bootstrap_at_time_limit`` False, where no step needs the value of an
episode's final observation):

1. sample actions from the policy outputs for ``s_t`` (its observations already in the obs
   buffer row ``t``);
2. step the env kernel: rewards ``r_t``, done flags, observations ``s_{t+1}``;
3. record the done flags and rewards, then reset the done envs in one kernel launch;
4. one forward per policy on the observations after the reset, gathered straight into the obs
   buffer row ``t + 1``: its outputs are step ``t + 1``'s policy outputs and values.

**Bootstrap** (``trainer.bootstrap_at_time_limit`` True):

1. record ``s_t`` into the obs buffers and sample actions;
2. step the env kernel;
3. one policy forward on ``s_{t+1}`` before the reset: its values are the bootstrap values
   ``V(s_{t+1})`` (used at time-limit truncations, since the final observation is still there);
4. reset done envs in one kernel launch; for those envs the observations become the saved reset
   observations, whose policy outputs were computed once per iteration, so the outputs for
   ``s_{t+1}`` after the reset are a ``torch.where`` away (without saved reset observations, one
   more forward on the observations after the reset).

Per step the reset-first order launches, per policy, one gather fewer, no ``torch.where`` and no
copy of the bootstrap values, and records neither timesteps nor truncation flags (read only to
split episode ends for bootstrapping).

A policy whose model is recurrent carries its state from step to step (:mod:`~warp_drive.training.carried_state`):
each forward reads the state and writes the next one, and after the resets :meth:`Rollout.carry_state` starts
the done envs' states afresh; in the bootstrap order its outputs after the reset come from one more forward
(its state differs per env, so no outputs of the reset observations are kept).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from warp_drive.vocab.constants import Constants
from warp_drive.errors import UsageError
from warp_drive.training.engine.acting import (cached_head_weights, forward_in_chunks, no_mark, observe, policy_obs,
                                        record_policy_obs, where_done)
from warp_drive.training.algorithms.base import Policy
from warp_drive.training.algorithms.compiled import ActingForward
from warp_drive.training.buffers import SharedBuffers, record_row, split_episode_ends
from warp_drive.training.engine.cpu_pipeline import rollout_in_env_parts
from warp_drive.training.interrupt import check_abort
from warp_drive.training.utils.minibatch import slice_rows

Tensor = torch.Tensor


@dataclass(frozen=True)
class RolloutSpec:
    """What a :class:`Rollout` reads of its engine: a read-only view, built once (``cpu_chunk_rows(num_agents)``:
    the envs per policy forward on the cpu backend, None on a GPU; ``forward_dtype`` and ``compile``: the
    policy forward's autocast dtype and ``torch.compile``, :class:`~warp_drive.training.algorithms.compiled.ActingForward`)."""

    env_wrapper: Any
    policies: Mapping[str, Policy]
    sampler: Any
    obs_names: list[str]
    steps_per_iter: int
    reset_obs_known: bool
    bootstrap_at_time_limit: bool
    cpu_chunk_rows: Callable[[int], int | None] | None = None
    forward_dtype: torch.dtype | None = None
    compile: bool = False


class Rollout:
    """Runs ``steps`` env steps for every policy, filling each policy's record
    (:class:`~warp_drive.training.buffers.RolloutBuffers` for on-policy policies).

    Per step only what cannot be derived later is copied (each policy's record and
    :class:`~warp_drive.training.buffers.SharedBuffers` say what); rewards and actions per policy,
    termination flags and episode statistics are computed once per iteration by :meth:`finalize`.

    The step methods that take a ``part`` work on the rollout itself, or on one block of envs of
    the cpu pipeline (:mod:`~warp_drive.training.cpu_pipeline`): an object with the same ``dm``,
    ``heads``, ``values`` and ``shared`` for its envs ``rows``.

    Args:
        spec: what the rollout reads of its engine.
        greedy: argmax / Gaussian-mean actions instead of sampled ones (:meth:`set_greedy`).
    """

    rows = slice(None)  # every env (a part of the cpu pipeline: its block)

    def __init__(self, spec: RolloutSpec, greedy: bool = False) -> None:
        self.spec = spec
        self.greedy = bool(greedy)
        self.dm = spec.env_wrapper.cuda_data_manager
        self.heads: dict[str, Any] = {}
        self.values: dict[str, Tensor] = {}
        #: bootstrap order with saved reset observations: each policy's outputs on them, per rollout
        self.reset_heads: dict[str, Any] = {}
        self.reset_values: dict[str, Tensor | None] = {}
        self._reset_first = not spec.bootstrap_at_time_limit
        self._streams: list[Any] = []  # side streams of forward_policies
        self._fits_heads: dict[str, bool] = {}  # per policy: one sampler launch for all heads (_one_launch)
        #: per sampled policy: its forward in the rollout's precision, compiled with ``compile``
        self._forwards = {p.tag: ActingForward(p.model, self.dm.device, spec.forward_dtype, spec.compile)
                          for p in spec.policies.values() if p.samples_in_kernel}
        own_placeholders = any(p.action_name != Constants.ACTIONS for p in spec.policies.values())
        self.shared = SharedBuffers(spec.steps_per_iter, self.dm, time_limits=spec.bootstrap_at_time_limit,
                                    joint_actions=own_placeholders)

    @property
    def reset_first(self) -> bool:
        """Steps run in the reset-first order (True, the default without bootstrapping at time
        limits) or the bootstrap order (False; tests set it to compare the two)."""
        return self._reset_first

    @reset_first.setter
    def reset_first(self, value: bool) -> None:
        if value and self.spec.bootstrap_at_time_limit:
            raise UsageError("reset_first=True drops the bootstrap values that trainer.bootstrap_at_time_limit=True "
                             "needs; set trainer.bootstrap_at_time_limit=false to step resets first")
        self._reset_first = bool(value)

    @property
    def customised(self) -> bool:
        """A subclass (whose steps may differ from these): the cpu pipeline then runs the plain loop."""
        return type(self) is not Rollout

    def run(self, timer: Any = None) -> dict[str, Tensor]:
        """One rollout: ``steps_per_iter`` env steps of every env (:meth:`step`), then :meth:`finalize`
        (no host sync); ``timer`` (a :class:`~warp_drive.training.phase_timer.PhaseTimer`) splits the time
        into the phases policy, sampling and env_step.

        Returns:
            ``{tag: V(s_B)}``, the values of the observations after the last step.
        """
        if self.dm.device.type == "cpu":  # cpu backend: env parts, one thread each, where they apply
            if (values := rollout_in_env_parts(self, timer)) is not None:
                return values
        mark = timer.start if timer is not None else no_mark
        mark("policy")
        with cached_head_weights(p.model for p in self.spec.policies.values() if self._caches_head_weights(p)):
            self.begin(record=True)
            for step in range(self.spec.steps_per_iter):
                check_abort()  # a stop requested inside a slow iteration (warp_drive.training.interrupt)
                self.step(step, mark)
        mark("policy")
        self.finalize()
        if timer is not None:
            timer.stop()
        return dict(self.values)

    def step(self, step: int, mark: Callable[[str], None] = no_mark) -> None:
        """Env step ``step`` of a rollout, recorded, in this rollout's order (:attr:`reset_first`);
        ``mark(phase)`` splits the time as :meth:`run` does (resets count as env_step)."""
        if self.reset_first:
            self.step_reset_first(step, mark)
        else:
            self.step_bootstrap(step, mark)

    @torch.no_grad()
    def step_reset_first(self, step: int, mark: Callable[[str], None] = no_mark) -> None:
        """One step in the reset-first order (module docstring); the policy outputs for ``s_t`` and
        its obs buffer row are already there."""
        mark("sampling")
        self.sample(step)
        mark("env_step")
        self.spec.env_wrapper.step_all_envs()
        self.shared.record(step, self.dm)
        self.record_next_obs(step)
        self.spec.env_wrapper.reset_only_done_envs()
        mark("policy")
        self.carry_state(self.shared.done[step])
        self.forward_policies(self.next_obs_row(step))

    @torch.no_grad()
    def step_bootstrap(self, step: int, mark: Callable[[str], None] = no_mark) -> None:
        """One step in the bootstrap order (module docstring)."""
        mark("sampling")
        self.record_obs(step)
        self.sample(step)
        mark("env_step")
        self.spec.env_wrapper.step_all_envs()
        mark("policy")
        done, next_out = self.after_step(step)
        mark("env_step")
        self.spec.env_wrapper.reset_only_done_envs()
        self.set_next_outputs(done, next_out)

    def set_greedy(self, greedy: bool) -> bool:
        """Sample greedily (True) or not from now on; returns the previous mode."""
        previous, self.greedy = self.greedy, bool(greedy)
        return previous

    def chunk_envs(self, p: Policy) -> int | None:
        """Envs per forward of policy ``p``: the engine's cpu chunks (:meth:`Engine.cpu_chunk_rows`), None on a GPU."""
        rows = self.spec.cpu_chunk_rows
        return rows(p.num_agents) if rows is not None else None

    def forward(self, p: Policy, obs: Any, rows: slice = slice(None), final: bool = False) -> tuple[Any, Tensor | None]:
        """``(outputs, values)`` of the policy's model on (E, A, ...) observations (in env chunks on
        the cpu backend): the head outputs and values of a policy the kernels sample, else the
        model's outputs (what :meth:`Policy.act` reads) and None.

        A recurrent model reads the carried state of envs ``rows`` and writes the next one
        (:class:`~warp_drive.training.carried_state.CarriedState`); ``final``: the observations are an
        episode's last before its reset (the bootstrap order's forward): it reads the state the last forward
        wrote and keeps none."""
        model = p.model if not p.samples_in_kernel else self._forwards[p.tag]
        carried = p.carried
        if carried is None:
            out = forward_in_chunks(model, obs, self.chunk_envs(p))
        else:
            state = carried.next[rows] if final else carried.inputs(rows)
            out, new_state = forward_in_chunks(lambda x: model(*x), (obs, state), self.chunk_envs(p))
            if not final:
                carried.set_next(new_state, rows)
        return out if p.samples_in_kernel else (out, None)

    def carry_state(self, done: Tensor, part: Any = None) -> None:
        """After an env step's resets: every recurrent policy's state for the next observations, the initial
        state where ``done`` ((E,) flags of ``part``'s envs) is set (:meth:`CarriedState.advance
        <warp_drive.training.carried_state.CarriedState.advance>`)."""
        rows = (part or self).rows
        for p in self.spec.policies.values():
            if p.carried is not None:
                p.carried.advance(done, rows)

    def _caches_head_weights(self, p: Policy) -> bool:
        forward = self._forwards.get(p.tag)
        return forward is None or forward.caches_head_weights

    def next_obs_row(self, step: int | None) -> int | None:
        """The obs buffer row of the observations after step ``step``'s reset (reset-first order), or None."""
        if step is None or step + 1 >= self.spec.steps_per_iter:
            return None
        return step + 1

    @torch.no_grad()
    def begin(self, record: bool = False) -> None:
        """Forward on the current observations (the weights changed) and, in the bootstrap order, on
        the reset observations. ``record``: a rollout starts, and in the reset-first order the
        current observations go to row 0 of the obs buffers (gathered once)."""
        row = 0 if record and self.reset_first else None
        if record and self.spec.reset_obs_known and not self.reset_first and self.spec.env_wrapper.fresh_start_states:
            raise UsageError(
                "fresh_start_states was turned on after the trainer was built, so the bootstrap step order would "
                "act on the saved start observations; set it before building the trainer (env config "
                "fresh_start_states: true)"
            )
        for p in self.spec.policies.values():
            if record and p.carried is not None:
                p.buffers.start_state.copy_(p.carried.hidden)
        self.forward_policies(row)
        for p in self.spec.policies.values():
            if self.spec.reset_obs_known and not self.reset_first and p.carried is None:
                self.reset_heads[p.tag], self.reset_values[p.tag] = self.forward(
                    p, policy_obs(self.dm, p, self.spec.obs_names, at_reset=True))

    @torch.no_grad()
    def sample(self, step: int | None) -> None:
        """Sample every policy's actions into the env's action placeholder; record them at ``step``.

        The sampler kernel writes the joint log-probability of the sampled action directly. A
        categorical policy takes one launch for all its heads and, when it samples into a
        placeholder of its own, the copy into the joint ``sampled_actions`` placeholder
        (``Sampler.sample_heads``, where the sampler offers it and the heads fit it; else one
        launch per head and an ``index_copy_``: the same results).
        """
        t = self.spec
        joint = step is not None and self.shared.actions is not None
        for p in t.policies.values():
            heads = self.heads[p.tag]
            record = step is not None and p.buffers is not None
            if not p.samples_in_kernel:
                actions = self._act(p, heads)
                if record and not joint:
                    record_row(p.buffers.actions, step, actions)
                continue
            lp = p.buffers.log_probs_row(step) if record else None
            own = p.action_name != Constants.ACTIONS  # a placeholder of its own: copy into the joint one
            copied = False
            if p.action_spec.is_gaussian:
                mean, std = heads[0]
                t.sampler.sample_gaussian(self.dm, mean, std, p.action_name, deterministic=self.greedy, check=False,
                                          log_probs=lp)
            elif self._one_launch(p, len(heads)):
                t.sampler.sample_heads(self.dm, heads, p.action_name, use_argmax=self.greedy, log_probs=lp,
                                       joint=(Constants.ACTIONS, p.agent_index) if own else None)
                copied = own  # the same launch wrote the joint placeholder
            else:
                for h, probs in enumerate(heads):
                    t.sampler.sample(self.dm, probs, p.action_name, use_argmax=self.greedy, head=h, check=False,
                                     log_probs=lp, accumulate_log_probs=h > 0)
            actions = self.dm.data_on_device_via_torch(p.action_name)
            if own and not copied:
                self.dm.data_on_device_via_torch(Constants.ACTIONS).index_copy_(1, p.agent_index, actions)
            if record:
                p.buffers.record_step(step, None if joint else actions, self.values[p.tag])
        if joint:
            self.shared.record_actions(step, self.dm)

    def _act(self, p: Policy, outputs: Any) -> Tensor:
        """Policy ``p``'s own actions (:meth:`Policy.act`) into the joint action placeholder; returns them."""
        placeholder = self.dm.data_on_device_via_torch(Constants.ACTIONS)
        actions = p.act(outputs, self.greedy)
        shaped = actions.to(placeholder.dtype).reshape(placeholder.shape[0], p.num_agents, *placeholder.shape[2:])
        if p.contiguous_all:
            placeholder.copy_(shaped)
        else:
            placeholder.index_copy_(1, p.agent_index, shaped)
        return actions

    def _one_launch(self, p: Policy, num_heads: int) -> bool:
        """Whether policy ``p``'s ``num_heads`` categorical heads take one ``Sampler.sample_heads``
        launch (``Sampler.fits_heads``; placeholders keep their shapes, so decided once per policy)."""
        if p.tag not in self._fits_heads:
            fits = getattr(self.spec.sampler, "fits_heads", None)
            joint = Constants.ACTIONS if p.action_name != Constants.ACTIONS else None
            self._fits_heads[p.tag] = fits is not None and fits(self.dm, p.action_name, num_heads, joint)
        return self._fits_heads[p.tag]

    @torch.no_grad()
    def record_obs(self, step: int, part: Any = None) -> None:
        part = part or self
        for p in self.spec.policies.values():
            record_policy_obs(part.dm, p, self.spec.obs_names, step, part.rows)

    @torch.no_grad()
    def end_step(self, step: None = None) -> None:
        """Everything after an env step that records nothing (evaluation): reset the done envs and
        set the policy outputs for the next step, always reset first (no bootstrap values are needed)."""
        carries = any(p.carried is not None for p in self.spec.policies.values())
        done = self.dm.data_on_device_via_torch(Constants.DONE) > 0 if carries else None
        self.spec.env_wrapper.reset_only_done_envs()
        if done is not None:
            self.carry_state(done)
        self.forward_policies(None)

    def forward_policies(self, row: int | None, part: Any = None) -> None:
        """Every policy's heads and values on the current observations (gathered into obs buffer row
        ``row`` when given, see :func:`observe`) of ``part`` (default: the whole rollout).

        On a GPU with several policies, policies after the first run on side streams forked from
        and joined back to the current one (also inside a CUDA graph capture): their small
        kernels overlap the first policy's instead of queueing behind them. Same kernels, same
        results.
        """
        part = part or self

        def forward(p: Policy) -> None:
            obs = observe(part.dm, p, self.spec.obs_names, row, part.rows)
            part.heads[p.tag], part.values[p.tag] = self.forward(p, obs, part.rows)

        policies = list(self.spec.policies.values())
        side = self._side_streams(len(policies) - 1) if part is self else []
        if not side:
            for p in policies:
                forward(p)
            return
        main = torch.cuda.current_stream()
        for p, stream in zip(policies[1:], side):
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                forward(p)
        forward(policies[0])
        for stream in side:
            main.wait_stream(stream)

    def _side_streams(self, count: int) -> list[Any]:
        """``count`` CUDA streams for :meth:`forward_policies` (created once; none on the cpu backend)."""
        if count < 1 or self.dm.device.type != "cuda":
            return []
        while len(self._streams) < count:
            self._streams.append(torch.cuda.Stream(device=self.dm.device))
        return self._streams[:count]

    @torch.no_grad()
    def after_step(self, step: int | None, part: Any = None) -> tuple[Tensor, dict[str, Any]]:
        """Bootstrap order: record done flags, timesteps and rewards; forward on ``s_{t+1}`` (bootstrap values)."""
        t, part = self.spec, part or self
        dm = part.dm
        done_i = part.shared.record(step, dm) if step is not None else dm.data_on_device_via_torch(Constants.DONE)
        next_out = {}
        for p in t.policies.values():
            obs = policy_obs(dm, p, t.obs_names)
            next_out[p.tag] = self.forward(p, obs, part.rows, final=True)
            if step is not None and p.samples_in_kernel:
                p.buffers.record_next_values(step, next_out[p.tag][1], part.rows)
            if step is not None and p.records_next_obs:
                p.record_next_obs(step, obs)
        return done_i > 0, next_out

    def record_next_obs(self, step: int) -> None:
        """The observations right after env step ``step``, before resets, to the policies that keep
        them (:attr:`Policy.records_next_obs`; the reset-first order, where no forward reads them)."""
        for p in self.spec.policies.values():
            if p.records_next_obs:
                p.record_next_obs(step, policy_obs(self.dm, p, self.spec.obs_names))

    @torch.no_grad()
    def set_next_outputs(self, done: Tensor, next_out: dict[str, Any], part: Any = None) -> None:
        """Bootstrap order, after the reset: the policy outputs for the next step (those on the
        saved reset observations where ``done`` (E,), else ``next_out``; a recurrent policy's from one
        more forward, after :meth:`carry_state`)."""
        t, part = self.spec, part or self
        if any(p.carried is not None for p in t.policies.values()):
            self.carry_state(done, part)
        for p in t.policies.values():
            heads, values = next_out[p.tag]
            if t.reset_obs_known and p.carried is None:
                reset_heads, reset_values = self.reset_heads[p.tag], self.reset_values[p.tag]
                if part is not self:
                    reset_heads = slice_rows(reset_heads, part.rows.start, part.rows.stop)
                    reset_values = reset_values[part.rows]
                part.heads[p.tag] = where_done(done, reset_heads, heads)
                part.values[p.tag] = where_done(done, reset_values, values)
            else:  # reset observations unknown (or a carried state): one more forward on the post-reset observations
                part.heads[p.tag], part.values[p.tag] = self.forward(p, policy_obs(part.dm, p, t.obs_names), part.rows)

    @torch.no_grad()
    def finalize(self) -> None:
        """After the last step: the episode ends (:func:`~warp_drive.training.buffers.split_episode_ends`),
        then :meth:`SharedBuffers.finalize <warp_drive.training.buffers.SharedBuffers.finalize>`:
        per-policy rewards, actions and flags, episode statistics and every trained policy's
        :meth:`Policy.finalize` (advantages, targets, replay pushes)."""
        t, sh = self.spec, self.shared
        ends = split_episode_ends(sh.done, sh.timestep, t.env_wrapper.episode_length, t.bootstrap_at_time_limit,
                                  sh.truncated)
        sh.finalize(t.policies.values(), ends, self.values, t.bootstrap_at_time_limit)
