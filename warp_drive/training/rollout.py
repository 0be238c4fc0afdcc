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
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from warp_drive.env.constants import Constants
from warp_drive.env.done import split_done
from warp_drive.errors import UsageError
from warp_drive.training.interrupt import check_abort
from warp_drive.training.algorithms.base import Policy

Tensor = torch.Tensor


def policy_obs(dm: Any, policy: Policy, obs_names: list[str], at_reset: bool = False) -> Any:
    """The policy's observations (E, A, ...) from the placeholders (a dict for Dict obs).

    Placeholders laid out ``(E, *features, N)`` (``obs_agents_last``) are seen agent-first (a view).
    """
    suffix = Constants.AT_RESET_SUFFIX if at_reset else ""

    def view(name: str) -> Tensor:
        x = dm.data_on_device_via_torch(name + suffix)
        return policy.select(x.movedim(-1, 1) if policy.obs_agents_last else x)

    if obs_names == [Constants.OBSERVATIONS]:
        return view(Constants.OBSERVATIONS)
    prefix = Constants.OBSERVATIONS + "_"
    return {n[len(prefix):]: view(n) for n in obs_names}


def record_policy_obs(dm: Any, policy: Policy, obs_names: list[str], step: int,
                      rows: slice = slice(None)) -> Any:
    """Policy ``policy``'s observations into its buffer at ``step`` (env rows ``rows``): one gather
    straight into the buffer for a plain agent-first placeholder of a subset of agents, else a view
    (or gather) and a copy.

    Returns the observations to run the policy on, what :func:`policy_obs` gives (same values,
    layout and shape): the buffer rows themselves after the one gather, else that view.
    """
    if obs_names == [Constants.OBSERVATIONS] and not policy.contiguous_all and not policy.obs_agents_last:
        src, dst = dm.data_on_device_via_torch(Constants.OBSERVATIONS), policy.buffers.obs[step][rows]
        if src.dtype == dst.dtype and dst.is_contiguous():
            torch.index_select(src, 1, policy.agent_index, out=dst)
            return dst
    obs = policy_obs(dm, policy, obs_names)
    if isinstance(obs, dict):
        for k, v in obs.items():
            policy.buffers.obs[k][step][rows].copy_(v)
    else:
        policy.buffers.obs[step][rows].copy_(obs)
    return obs


def observe(dm: Any, policy: Policy, obs_names: list[str], step: int | None,
            rows: slice = slice(None)) -> Any:
    """The policy's observations to run it on (:func:`policy_obs`), also recorded in its obs buffer
    at ``step`` (env rows ``rows``) unless ``step`` is None (:func:`record_policy_obs`: gathered
    once, straight into the buffer, where it can)."""
    if step is None:
        return policy_obs(dm, policy, obs_names)
    return record_policy_obs(dm, policy, obs_names, step, rows)


def forward_in_chunks(model: Any, obs: Any, chunk_envs: int | None) -> Any:
    """``model(obs)``, run on at most ``chunk_envs`` envs (first axis) at a time when given.

    On the cpu backend this keeps a forward's activations small (cache-sized, reused by the
    allocator) instead of ``E x A x width`` floats per layer; the outputs are concatenated back.
    None, or a chunk covering every env: one call.
    """
    first = next(iter(obs.values())) if isinstance(obs, dict) else obs
    num_envs = first.shape[0]
    if chunk_envs is None or chunk_envs >= num_envs:
        return model(obs)
    parts = []
    for start in range(0, num_envs, chunk_envs):
        stop = min(start + chunk_envs, num_envs)
        part = {k: v[start:stop] for k, v in obs.items()} if isinstance(obs, dict) else obs[start:stop]
        parts.append(model(part))
    return _cat_outputs(parts)


def _cat_outputs(parts: list[Any]) -> Any:
    """Concatenates a list of same-structured model outputs (tensors, tuples, lists) along axis 0."""
    first = parts[0]
    if isinstance(first, Tensor):
        return torch.cat(parts, 0)
    return type(first)(_cat_outputs([p[i] for p in parts]) for i in range(len(first)))


@contextlib.contextmanager
def cached_head_weights(models: Iterable[Any]) -> Iterator[None]:
    """Within the block, models that offer it (``cache_head_weights``, e.g.
    :class:`~warp_drive.training.models.fully_connected.FullyConnected`) concatenate their head
    weights once, at the start, instead of in every no-grad forward. The weights do not change
    during a rollout; inside a CUDA graph the concatenation is captured too, so each replay reads
    the current weights."""
    cached = []
    try:
        for model in models:
            module = getattr(model, "module", model)  # DistributedDataParallel wraps the model
            if hasattr(module, "cache_head_weights"):
                module.cache_head_weights(True)
                cached.append(module)
        yield
    finally:
        for module in cached:
            module.cache_head_weights(False)


def _no_mark(phase: str) -> None:
    """Phase marker used when timing is off."""


def _where_done(done: Tensor, a: Any, b: Any) -> Any:
    """Per env: ``a`` where done else ``b`` (works on tensors, (mean, std) pairs and lists)."""
    if a is None:
        return None
    if isinstance(a, (list, tuple)):
        return type(a)(_where_done(done, x, y) for x, y in zip(a, b))
    mask = done.view(-1, *([1] * (a.dim() - 1)))
    return torch.where(mask, a, b)


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


class SharedBuffers:
    """Per-step arrays every policy reads: done flags, timesteps and all agents' rewards (and actions).

    Args:
        steps: rows (env steps) of every array.
        dm: the data manager whose placeholders are recorded.
        time_limits: keep timesteps and (envs whose step writes ``_truncated_``) truncation flags,
            which only bootstrapping at time limits reads; False: both are None and not recorded.
        joint_actions: keep every agent's actions (the joint ``sampled_actions`` placeholder) once
            per step, for policies that sample into placeholders of their own: one copy per step
            instead of one per policy (:meth:`Rollout.finalize` picks each policy's agents).

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
        if joint_actions:
            actions = dm.data_on_device_via_torch(Constants.ACTIONS)
            self.actions = torch.zeros((steps, *actions.shape), dtype=actions.dtype, device=actions.device)

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
        return done

    def record_actions(self, step: int, dm: Any) -> None:
        """Copy every agent's sampled actions into row ``step`` (with ``joint_actions``)."""
        self.actions[step].copy_(dm.data_on_device_via_torch(Constants.ACTIONS))

    def policy_rewards(self, p: Any) -> Tensor:
        """The rewards of policy ``p``'s agents, (B, E, A_p) (a view when it covers all agents in order)."""
        return self.rewards if p.contiguous_all else self.rewards.index_select(2, p.agent_index)


@dataclass(frozen=True)
class RolloutSpec:
    """What a :class:`Rollout` reads of its engine: a read-only view, built once.

    ``cpu_chunk_rows(num_agents)`` gives the envs per policy forward on the cpu backend (None: all
    at once, as on a GPU).
    """

    env_wrapper: Any
    policies: Mapping[str, Policy]
    sampler: Any
    obs_names: list[str]
    steps_per_iter: int
    reset_obs_known: bool
    bootstrap_at_time_limit: bool
    cpu_chunk_rows: Callable[[int], int | None] | None = None


class Rollout:
    """Runs ``steps`` env steps for every policy, filling each policy's :class:`RolloutBuffers`.

    Per step only what cannot be derived later is copied (observations, log-probs and values per
    policy; actions per policy, or once for all agents when the policies sample into placeholders
    of their own; done flags and rewards once, and timesteps and truncation flags when
    bootstrapping at time limits); rewards and actions per policy, termination flags and episode
    statistics are computed once per iteration by :meth:`finalize`.

    The step order (module docstring) is "reset first" unless the spec bootstraps at time limits;
    :attr:`reset_first` says which.

    Args:
        spec: what the rollout reads of its engine.
        greedy: argmax / Gaussian-mean actions instead of sampled ones (:meth:`set_greedy`).
    """

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

    def run(self, timer: Any = None) -> dict[str, Tensor]:
        """One rollout: ``steps_per_iter`` env steps of every env, then :meth:`finalize` (no host sync).

        ``timer`` (a :class:`~warp_drive.training.phase_timer.PhaseTimer`) splits the time into the
        phases policy, sampling and env_step.

        Returns:
            ``{tag: V(s_B)}``, the values of the observations after the last step.
        """
        if self.dm.device.type == "cpu":  # cpu backend: env parts, one thread each, where they apply
            from warp_drive.training.cpu_pipeline import rollout_in_env_parts

            if (values := rollout_in_env_parts(self, timer)) is not None:
                return values
        mark = timer.start if timer is not None else _no_mark
        mark("policy")
        with cached_head_weights(p.model for p in self.spec.policies.values()):
            self.begin(record=True)
            for step in range(self.spec.steps_per_iter):
                check_abort()  # a stop requested inside a slow iteration (warp_drive.training.interrupt)
                mark("sampling")
                if not self.reset_first:
                    self.record_obs(step)
                self.sample(step)
                mark("env_step")
                self.spec.env_wrapper.step_all_envs()
                self.end_step(step, mark)
        mark("policy")
        self.finalize()
        if timer is not None:
            timer.stop()
        return dict(self.values)

    def set_greedy(self, greedy: bool) -> bool:
        """Sample greedily (True) or not from now on; returns the previous mode."""
        previous, self.greedy = self.greedy, bool(greedy)
        return previous

    def chunk_envs(self, p: Policy) -> int | None:
        """Envs per forward of policy ``p``: the engine's cpu chunks (:meth:`Engine.cpu_chunk_rows`),
        None (all envs at once) on a GPU."""
        rows = self.spec.cpu_chunk_rows
        return rows(p.num_agents) if rows is not None else None

    def forward(self, p: Policy, obs: Any) -> tuple[Any, Tensor | None]:
        """``(outputs, values)`` of the policy's model on (E, A, ...) observations (in env chunks on
        the cpu backend): the head outputs and values of a policy the kernels sample, else the
        model's outputs (what :meth:`Policy.act` reads) and None."""
        out = forward_in_chunks(p.model, obs, self.chunk_envs(p))
        return out if p.samples_in_kernel else (out, None)

    def next_obs_row(self, step: int | None) -> int | None:
        """The obs buffer row that the observations after step ``step``'s reset go to in the
        reset-first order: ``step + 1``, or None after the last step (or for ``step`` None)."""
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
        self.forward_policies(row)
        for p in self.spec.policies.values():
            if self.spec.reset_obs_known and not self.reset_first:
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
                    p.buffers.actions[step].copy_(actions)
                continue
            lp = p.buffers.log_probs[step] if record else None
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
                if not joint:
                    p.buffers.actions[step].copy_(actions)
                p.buffers.values[step].copy_(self.values[p.tag])
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
    def record_obs(self, step: int) -> None:
        for p in self.spec.policies.values():
            record_policy_obs(self.dm, p, self.spec.obs_names, step)

    @torch.no_grad()
    def end_step(self, step: int | None, mark: Callable[[str], None] = _no_mark) -> None:
        """Everything after the env step: record it at ``step`` (None: record nothing), reset the
        done envs and set the policy outputs for the next step, in this rollout's order (always
        reset first when nothing is recorded, as in evaluation: no bootstrap values are needed).

        ``mark(phase)`` splits the time as :meth:`run` does (resets count as env_step).
        """
        t = self.spec
        if step is not None and not self.reset_first:
            mark("policy")
            done, next_out = self.after_step(step)
            mark("env_step")
            self.advance(done, next_out)
            return
        if step is not None:
            self.shared.record(step, self.dm)
            self.record_next_obs(step)
        t.env_wrapper.reset_only_done_envs()
        mark("policy")
        self.forward_policies(self.next_obs_row(step))

    def forward_policies(self, row: int | None) -> None:
        """Every policy's heads and values on the current observations (gathered into obs buffer row
        ``row`` when given, see :func:`observe`).

        On a GPU with several policies, policies after the first run on side streams forked from
        and joined back to the current one (also inside a CUDA graph capture): their small
        kernels overlap the first policy's instead of queueing behind them. Same kernels, same
        results.
        """
        def forward(p: Policy) -> None:
            self.heads[p.tag], self.values[p.tag] = self.forward(p, observe(self.dm, p, self.spec.obs_names, row))

        policies = list(self.spec.policies.values())
        side = self._side_streams(len(policies) - 1)
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
        """``count`` CUDA streams for :meth:`forward_policies` (created once; none on the cpu
        backend)."""
        if count < 1 or self.dm.device.type != "cuda":
            return []
        while len(self._streams) < count:
            self._streams.append(torch.cuda.Stream(device=self.dm.device))
        return self._streams[:count]

    @torch.no_grad()
    def after_step(self, step: int | None) -> tuple[Tensor, dict[str, Any]]:
        """Bootstrap order: record done flags, timesteps and rewards; forward on ``s_{t+1}``
        (bootstrap values)."""
        t, dm = self.spec, self.dm
        done_i = self.shared.record(step, dm) if step is not None else dm.data_on_device_via_torch(Constants.DONE)
        next_out = {}
        for p in t.policies.values():
            obs = policy_obs(dm, p, t.obs_names)
            next_out[p.tag] = self.forward(p, obs)
            if step is not None and p.samples_in_kernel:
                p.buffers.next_values[step].copy_(next_out[p.tag][1])
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
    def advance(self, done: Tensor, next_out: dict[str, Any]) -> None:
        """Bootstrap order: reset done envs (one launch) and set the policy outputs for the next step."""
        t = self.spec
        t.env_wrapper.reset_only_done_envs()
        for p in t.policies.values():
            heads, values = next_out[p.tag]
            if t.reset_obs_known:
                self.heads[p.tag] = _where_done(done, self.reset_heads[p.tag], heads)
                self.values[p.tag] = _where_done(done, self.reset_values[p.tag], values)
            else:  # reset observations unknown: one more forward on the post-reset observations
                self.heads[p.tag], self.values[p.tag] = self.forward(p, policy_obs(self.dm, p, t.obs_names))

    @torch.no_grad()
    def finalize(self) -> None:
        """Per-policy rewards (and actions, when recorded for all agents at once),
        termination/truncation flags and episode statistics, then every trained policy's
        :meth:`Policy.finalize` (advantages, targets, replay pushes)."""
        t, sh = self.spec, self.shared
        done, terminated, truncated = split_episode_ends(sh.done, sh.timestep, t.env_wrapper.episode_length,
                                                         t.bootstrap_at_time_limit, sh.truncated)
        bootstrap = t.bootstrap_at_time_limit
        for p in t.policies.values():
            b = p.buffers
            b.rewards.copy_(sh.policy_rewards(p))
            if sh.actions is not None:
                torch.index_select(sh.actions, 2, p.agent_index, out=b.actions)
            b.terminated.copy_(terminated)
            b.truncated.copy_(truncated)
            p.stats.update_from_batch(b.rewards, done)
            if p.to_train:
                p.finalize(self.values[p.tag], bootstrap)
