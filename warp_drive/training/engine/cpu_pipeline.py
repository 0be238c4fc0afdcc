"""cpu backend: the rollout in env parts, one thread per part, with the same results.

The NumPy env step and sampler run on one core while a torch forward can use all of them, so on
``C`` torch threads (``torch.get_num_threads()``) a step of the plain loop (:meth:`Rollout.run`)
leaves ``C - 1`` cores idle for its NumPy half. Here the envs are split into ``C`` contiguous
parts and each part runs the whole rollout loop (record observations, sample, env step, reset,
forward, in the plain loop's order) in its own thread, torch on one intra-op thread: NumPy and torch
release the GIL, so one part's env step overlaps another part's forward and every core stays busy.
The parts wait for each other only at the end of the rollout.

Results are those of the plain loop (``tests/cpu/training/test_cpu_pipeline.py``), bit for bit
where the BLAS rounds a row the same whatever the other rows and threads of the call (MKL's float32
GEMM on AVX2, for calls of 4 rows or more in multiples of 4), else to float rounding:

* the env's ``numpy_step`` treats envs independently (the env says so: see :data:`SEPARABLE`), and
  each part steps a view of its envs' rows of every per-env array;
* sampler draws depend on the row (counter word 0), its per-row call counter, the seed and the
  head only; a part passes its first row (:func:`~warp_drive.managers.cpu_kernels.sample_action_rows`),
  so which thread draws a row does not change the draw. Resets likewise pass their first env
  (:func:`~warp_drive.managers.cpu_kernels.reset_env_rows`) for the reset-pool draws;
* the policy is row-wise (an MLP, or a recurrent model whose carried state is kept per row): a forward
  of a part gives the rows the whole forward gives, as for the env chunks that :meth:`Rollout.forward`
  already uses on the cpu. Layers whose forward changes state (batch-norm statistics, dropout draws) keep
  the rollout in one thread.

Everything before the first step (:meth:`Rollout.begin`) and after the last
(:meth:`Rollout.finalize`) runs once, on every core, as in the plain loop.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

import numpy as np
import torch

from warp_drive.vocab.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.services.environment_reset import EnvironmentReset
from warp_drive.services.sampler import Sampler
from warp_drive.training.engine.acting import cat_outputs, no_mark
from warp_drive.training.interrupt import check_abort
from warp_drive.training.utils.minibatch import slice_rows

logger = logging.getLogger(__name__)

Tensor = torch.Tensor

#: The env class attribute that lets the rollout run in parts
#: (:attr:`~warp_drive.env.context.CUDAEnvironmentContext.numpy_step_is_env_separable`).
SEPARABLE = "numpy_step_is_env_separable"

#: per rollout (a :class:`~warp_drive.training.engine.rollout.Rollout`): (its key, its pipeline or None)
_PIPELINES: "weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], EnvPartsRollout | None]]" = (
    weakref.WeakKeyDictionary()
)


def rollout_in_env_parts(rollout: Any, timer: Any = None) -> dict[str, Tensor] | None:
    """One rollout (what the plain loop of :meth:`Rollout.run` does) in env parts, returning ``{tag: V(s_B)}``,
    when :func:`why_not_parts` finds nothing against it; else None and nothing is done. ``timer`` gets the
    phases as the first part's thread sees them (the other parts run at the same time)."""
    key = (getattr(rollout.dm, "version", None), torch.get_num_threads(), rollout.greedy)
    cached = _PIPELINES.get(rollout)
    if cached is None or cached[0] != key:
        reason = why_not_parts(rollout)
        if reason is not None:
            logger.debug("cpu rollout in one thread: %s", reason)
        cached = (key, None if reason is not None else EnvPartsRollout(rollout, torch.get_num_threads()))
        _PIPELINES[rollout] = cached
    pipeline = cached[1]
    return None if pipeline is None else pipeline.run(timer)


def why_not_parts(rollout: Any) -> str | None:
    """Why a rollout runs in one thread (a sentence), or None when it can run in env parts."""
    spec, dm = rollout.spec, rollout.dm
    wrapper = spec.env_wrapper
    env = getattr(wrapper, "env", None)
    checks = (
        (dm is not None and dm.device.type == "cpu", "the parts are for the cpu backend"),
        (torch.get_num_threads() >= 2, "torch runs on one thread"),
        (dm is not None and dm.num_envs >= 2, "one env replica"),
        (getattr(type(env), SEPARABLE, False) is True, f"{type(env).__name__} does not set {SEPARABLE} = True"),
        (type(env).step is CUDAEnvironmentContext.step, "the env overrides step()"),
        (type(wrapper).step_all_envs is EnvWrapper.step_all_envs
         and type(wrapper).reset_only_done_envs is EnvWrapper.reset_only_done_envs, "the env wrapper is customised"),
        (not wrapper.cuda_function_manager.has_kernels, "env kernels are compiled"),
        (not rollout.customised, "the rollout is customised"),
        (type(spec.sampler) is Sampler and spec.sampler.seed is not None, "the sampler is customised or not seeded"),
        (type(wrapper.env_resetter) is EnvironmentReset, "the env resetter is customised"),
        (not getattr(wrapper, "reset_on_host", True), "the envs were not reset yet"),
        (all(p.buffers is not None for p in spec.policies.values()), "a policy has no rollout buffers"),
        (all(p.samples_in_kernel and not p.records_next_obs for p in spec.policies.values()),
         "a policy acts outside the sampler kernels"),
    )
    for ok, reason in checks:
        if not ok:
            return reason
    for p in spec.policies.values():
        stateful = _stateful_layer(p.model)
        if stateful is not None:
            return f"policy '{p.tag}' has {stateful}, whose forward changes state (running statistics, random draws)"
    return _env_axis_problem(dm, _env_axis_names(dm, spec))


def _stateful_layer(model: torch.nn.Module) -> str | None:
    """A layer whose forward in training mode updates buffers or draws from torch's global
    generator (the order of the parts' forwards would change the results), or None."""
    for name, m in model.named_modules():
        if not m.training:
            continue
        if ((isinstance(m, torch.nn.modules.batchnorm._NormBase) and m.track_running_stats)
                or (isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0)):
            return f"a {type(m).__name__} layer '{name}'"
    return None


def _env_axis_names(dm: Any, spec: Any) -> set[str]:
    """The per-env arrays a part slices: the placeholders, flags and network inputs (``state``) the rollout reads,
    and the reset arrays."""
    names = {Constants.DONE, Constants.TIMESTEP, Constants.REWARDS, Constants.ACTIONS, *spec.obs_names}
    names.update(p.action_name for p in spec.policies.values())
    names.update(n for p in spec.policies.values() if p.inputs is not None for n in p.inputs.store_names)
    names.update(n for n in (Constants.TRUNCATED, Constants.EPISODE) if dm.is_data_on_device(n))
    names.update(dm.reset_data_list)
    names.update(dm.reset_target_to_pool)
    copies = [n + Constants.AT_RESET_SUFFIX for n in names]
    names.update(c for c in copies if dm.is_data_on_device(c))
    return names


def _env_axis_problem(dm: Any, per_env: set[str]) -> str | None:
    view = dm.host_view()
    for name in sorted(per_env):
        arr = view.get(name)
        if not isinstance(arr, np.ndarray) or arr.ndim == 0 or arr.shape[0] != dm.num_envs:
            return f"'{name}' has no env axis on the data store"
    placeholders = (Constants.OBSERVATIONS, Constants.ACTIONS, Constants.REWARDS)
    for name in sorted(set(view) - per_env):
        if name.startswith(placeholders):
            return f"placeholder '{name}' is not one the rollout reads"
    return None


class _EnvRows:
    """The data manager seen through one block of envs: ``data_on_device_via_torch`` gives rows
    ``lo:hi`` (what :func:`~warp_drive.training.engine.acting.policy_obs` reads)."""

    def __init__(self, dm: Any, lo: int, hi: int) -> None:
        self._dm, self._lo, self._hi = dm, lo, hi

    def data_on_device_via_torch(self, name: str) -> Tensor:
        return self._dm.data_on_device_via_torch(name)[self._lo : self._hi]


class _Part:
    """One block of envs ``lo:hi``: its views, policy outputs, sampler error bits and reset table
    (the ``part`` of :class:`~warp_drive.training.engine.rollout.Rollout`'s step methods)."""

    def __init__(self, pipeline: "EnvPartsRollout", lo: int, hi: int) -> None:
        dm = pipeline.dm
        self.lo, self.hi, self.rows = lo, hi, slice(lo, hi)
        self.dm = _EnvRows(dm, lo, hi)
        per_env = _env_axis_names(dm, pipeline.spec)
        self.env_view = {k: (v[lo:hi] if k in per_env else v) for k, v in dm.host_view().items()}
        self.error_flag = np.zeros(1, np.int32)
        self.heads: dict[str, Any] = {}
        self.values: dict[str, Tensor] = {}
        self.shared: Any = None
        self.error: BaseException | None = None
        self.reset = pipeline.spec.env_wrapper.env_resetter.rows_reset(dm, lo, hi, pipeline.spec.env_wrapper.env,
                                                                       self.env_view)


class EnvPartsRollout:
    """A :class:`~warp_drive.training.engine.rollout.Rollout` of the cpu backend run in ``parts`` blocks
    of envs, one thread each (see the module docstring); :meth:`run` does what one plain
    ``generate_rollout()`` does. Build it when :func:`why_not_parts` returns None."""

    def __init__(self, rollout: Any, parts: int) -> None:
        self.rollout = rollout
        self.spec = rollout.spec
        self.dm = rollout.dm
        E = self.dm.num_envs
        parts = max(1, min(int(parts), E))
        bounds = [E * k // parts for k in range(parts + 1)]
        self.parts = [_Part(self, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
        self.stop = threading.Event()

    # ------------------------------------------------------------------ the whole rollout
    def run(self, timer: Any = None) -> dict[str, Tensor]:
        """One rollout: :meth:`Rollout.begin`, every part's steps in parallel, :meth:`Rollout.finalize`
        (``timer``: see :func:`rollout_in_env_parts`)."""
        R = self.rollout
        mark = timer.start if timer is not None else no_mark
        mark("policy")
        R.begin(record=True)
        self._check_heads()
        for part in self.parts:
            part.heads = {tag: slice_rows(h, part.lo, part.hi) for tag, h in R.heads.items()}
            part.values = {tag: v[part.lo : part.hi] for tag, v in R.values.items()}
            part.shared = R.shared.env_columns(part.lo, part.hi)
            part.error = None
        self.stop.clear()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one core per part; the parts together use them all
        try:
            workers = [threading.Thread(target=self._run_part, args=(part,), name=f"wd-env-part-{k}", daemon=True)
                       for k, part in enumerate(self.parts[1:], 1)]
            for w in workers:
                w.start()
            try:
                self._run_part(self.parts[0], mark)
            finally:
                for w in workers:
                    w.join()
        finally:
            torch.set_num_threads(threads)
        for part in self.parts:
            if part.error is not None:
                raise part.error
        for tag in R.heads:
            R.heads[tag] = cat_outputs([part.heads[tag] for part in self.parts])
            R.values[tag] = torch.cat([part.values[tag] for part in self.parts])
        bits = 0
        for part in self.parts:
            bits |= int(part.error_flag[0])
            part.error_flag[0] = 0
        if bits:  # where the sampler's check() reads them
            self.spec.sampler.add_error_bits(bits)
        mark("policy")
        R.finalize()
        if timer is not None:
            timer.stop()
        return dict(R.values)

    def _check_heads(self) -> None:
        """The sampler's own argument checks on the whole batch (shapes, dtypes, registration),
        and its per-row counters created, before the threads start."""
        for p in self.spec.policies.values():
            self.spec.sampler.prepare_rows(self.dm, p.action_name, self.rollout.heads[p.tag], p.action_spec.is_gaussian,
                                           self.dm.num_envs * p.num_agents)

    def _run_part(self, part: _Part, mark: Any = None) -> None:
        """Every step of the rollout for one part (records the first error and stops the others)."""
        mark = mark or no_mark
        step_envs = self.spec.env_wrapper.env.numpy_step
        R = self.rollout
        reset_first = R.reset_first
        try:
            with torch.no_grad():  # grad mode is per thread
                for step in range(self.spec.steps_per_iter):
                    if self.stop.is_set():
                        return
                    check_abort()  # a stop requested inside a slow iteration (run() re-raises it)
                    mark("sampling")
                    if not reset_first:
                        R.record_obs(step, part)
                    self._sample(part, step)
                    mark("env_step")
                    step_envs(part.env_view)
                    if reset_first:  # Rollout.step_reset_first
                        part.shared.record(step, part.dm)
                        self._reset(part)
                        mark("policy")
                        R.carry_state(part.shared.done[step], part)
                        R.forward_policies(R.next_obs_row(step), part)
                        continue
                    mark("policy")  # Rollout.step_bootstrap
                    done, next_out = R.after_step(step, part)
                    mark("env_step")
                    self._reset(part)
                    R.set_next_outputs(done, next_out, part)
        except BaseException as exc:  # noqa: BLE001  (run() re-raises it in the calling thread)
            part.error = exc
            self.stop.set()

    # ------------------------------------------------------------------ one step of one part
    def _sample(self, part: _Part, step: int) -> None:
        """The sampler kernels on the part's rows (:meth:`Rollout.sample`)."""
        lo, hi, rows = part.lo, part.hi, part.rows
        joint = part.shared.actions is not None
        for p in self.spec.policies.values():
            actions = self.dm.data_on_device_via_torch(p.action_name)[lo:hi]
            self.spec.sampler.sample_rows(p.action_name, part.heads[p.tag], p.action_spec.is_gaussian, actions,
                                          lo * p.num_agents, p.buffers.log_probs_row(step, rows), part.error_flag,
                                          self.rollout.greedy)
            if p.action_name != Constants.ACTIONS:
                part.dm.data_on_device_via_torch(Constants.ACTIONS).index_copy_(1, p.agent_index, actions)
            p.buffers.record_step(step, None if joint else actions, part.values[p.tag], rows)
        if joint:
            part.shared.record_actions(step, part.dm)

    def _reset(self, part: _Part) -> None:
        part.reset(part.dm.data_on_device_via_torch(Constants.DONE), part.dm.data_on_device_via_torch(Constants.TIMESTEP))
