"""Gymnasium 1.x ``VectorEnv`` over all replicas of a warp_drive env, on the device.

Example::

    import torch
    import example_envs  # the example envs register themselves (by name) in warp_drive's env registrar
    from warp_drive.interop import WarpDriveVectorEnv

    envs = WarpDriveVectorEnv("cartpole", num_envs=1024, backend="pycuda",
                              env_config={"episode_length": 500, "reset_pool_size": 1000, "seed": 0})
    obs, infos = envs.reset(seed=0)              # obs: (1024, 4) float32 CUDA tensor
    actions = torch.randint(0, 2, (1024,), device=obs.device)
    obs, rewards, terminations, truncations, infos = envs.step(actions)

**Outputs live on the device** (``output="torch"``, the default). ``observations``, ``rewards``,
``terminations``, ``truncations`` and ``infos["final_obs"]`` are torch tensors on the data store's
device (CUDA on the pycuda backend, CPU on the cpu backend). Nothing is copied to the host:
``observations`` and ``rewards`` are *views* of the data store (by default, ``copy=False``), so the
next ``step()`` / ``reset()`` overwrites them in place, as Gymnasium's ``SyncVectorEnv(copy=False)``
does; clone what you keep, or pass ``copy=True`` to get device copies. Terminations and
truncations are fresh bool tensors.

**NumPy outputs** (``output="numpy"``): the same values as NumPy arrays, the types Gymnasium's
own vector wrappers (``RecordEpisodeStatistics``, ``NormalizeObservation``, ``ClipAction``, ...)
and NumPy-based trainers (skrl's Gymnasium wrapper, CleanRL-style loops) expect: observations
``float32``, rewards ``float32``, terminations / truncations / the ``_final_*`` masks ``bool``,
``infos["final_obs"]`` a ``float32`` array. On the cpu backend with ``copy=False`` observations and
rewards are zero-copy views of the store (overwritten by the next call, as above); on the pycuda
backend every call copies them to the host once (one device sync per step).

**Autoreset: same step** (``metadata["autoreset_mode"] = AutoresetMode.SAME_STEP``), WarpDrive's
natural mode. A sub-env whose episode ends in ``step()`` is reset inside that same ``step()`` (on
the device, never touching the host: from its saved initial state, the one its last ``reset()``
installed, or a reset-pool draw); the returned observation is its *reset* observation, while the
reward, termination and truncation are those of the final transition. Its final observation is in
``infos["final_obs"]`` (a device copy of all sub-envs' observations taken after the env step and
before the reset; rows of sub-envs that did not end hold their current observation), with the bool
mask ``infos["_final_obs"]`` marking the sub-envs that ended. ``infos["final_info"]`` is ``{}`` with
the same mask ``infos["_final_info"]`` (warp_drive envs report no per-step info). Use ``final_obs``
to bootstrap values of truncated episodes.

**Other autoreset modes** (``autoreset_mode=``, as Gymnasium's ``SyncVectorEnv`` takes it; Gymnasium's
observation wrappers such as ``NormalizeObservation`` accept only these two):

* ``AutoresetMode.NEXT_STEP`` (Gymnasium's default): ``step()`` returns an ended sub-env's *final*
  observation; the next ``step()`` ignores that sub-env's action and returns its reset observation
  with reward 0 and no termination or truncation. On the device the replica still restarts at once
  (and again after the ignored step, so the returned reset observation matches its state); the
  observations and rewards returned are copies (``copy`` does not apply) and ``infos`` is ``{}``.
* ``AutoresetMode.DISABLED``: nothing is reset inside ``step()``; reset ended sub-envs with
  ``reset(options={"reset_mask": mask})``. ``step()`` refuses to step a replica whose episode
  ended and was not reset (one host sync per step for that check).

**Termination vs truncation.** ``_done_ > 0`` ends an episode; :func:`warp_drive.vocab.done.split_done`
tells a truncation from a termination.

**Agents.** Only single-agent envs (N == 1) are accepted, unless ``flatten_agents=True``: then
each (env replica, agent) pair is one sub-env, ``num_envs = E * N`` in env-major order (sub-env
``e * N + a``), all agents must share one observation and one action space, and every sub-env of a
replica ends (and resets) when the replica's episode ends. Agents that leave a game early (e.g.
tagged TagContinuous runners) are not reported separately: until their replica ends they get
whatever the env writes for them (TagContinuous: reward 0, and their actions are ignored).

**Seeding.** ``reset(seed=s)`` first re-seeds everything the env drew once, as if it had been
built with ``seed=s`` (the env's ``reseed`` hook: TagContinuous's roles, reset pools; see
:func:`~warp_drive.interop._common.reseed_env`), and writes those arrays to the store; then it
re-seeds the env's start-state RNG with ``s + e`` for replica ``e`` and draws that replica's new
initial state from it (classic-control envs then start exactly where gymnasium's
``reset(seed=s + e)`` starts, as float32); it re-seeds the reset-pool draws (Philox key ``s``),
seeds ``action_space`` and ``single_action_space`` with ``s`` and sets ``np_random``. So two
adapters built without an env seed behave identically after the same ``reset(seed=s)``. With
``options["reset_mask"]`` only the masked replicas' start states are re-seeded (roles and pools of
running replicas are kept).
``reset()`` without a seed draws new initial states from the env's RNG stream
(``redraw_start_states=True``, default) or only restores the saved ones on the device
(``redraw_start_states=False``).

**Actions** are a torch tensor (ideally already on the device) or anything NumPy accepts, with
``num_envs`` rows: shape ``(num_envs,)`` or ``(num_envs, 1)`` for Discrete, ``(num_envs, heads)``
for MultiDiscrete, ``(num_envs, *box_shape)`` for Box. They are written into the data store's
``sampled_actions`` with one device copy.

**Invalid actions** (``invalid_actions=``) are checked before that copy, vectorised, where the
actions are (NumPy input on the host, a CUDA tensor on the device): ``"raise"`` (the default)
refuses the step with :class:`~warp_drive.errors.InvalidActionError` naming the sub-envs (one host
sync per step for a CUDA tensor), ``"clip"`` clips into the space (no host sync). What counts as
invalid, and how values are clipped: :mod:`warp_drive.interop._actions`.

Gymnasium utilities used: ``gymnasium.vector.utils.batch_space`` builds the batched spaces;
``gymnasium.vector.VectorEnv`` supplies ``np_random`` seeding, ``close()`` and ``unwrapped``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from warp_drive.utils.checks import closest_match
from warp_drive.vocab.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext
from warp_drive.env.placeholders import action_layout
from warp_drive.vocab.registrar import EnvironmentRegistrar
from warp_drive.env.env_wrapper import EnvWrapper, resolve_backend
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.interop._actions import ActionChecker, as_tensor, invalid_actions_mode
from warp_drive.interop._common import (
    InteropError,
    agent_ids,
    build_wrapper,
    check_seed,
    done_tensors,
    install_start_states,
    make_env,
    shared_host_values,
    split_done,
)
from warp_drive.utils.spaces import to_gymnasium

logger = logging.getLogger(__name__)

#: Accepted values of ``WarpDriveVectorEnv(output=...)``.
OUTPUTS = ("torch", "numpy")


class WarpDriveVectorEnv(VectorEnv):
    """All replicas of a warp_drive env as a Gymnasium ``VectorEnv`` (see the module docstring).

    Args:
        env: an env instance, the name of an env in ``env_registrar`` (``"cartpole"``, ... once
            ``example_envs`` is imported), or an :class:`~warp_drive.env.env_wrapper.EnvWrapper` (its
            ``num_envs`` is used).
        num_envs: env replicas E (default 1; omit with an EnvWrapper).
        env_config: keyword arguments of the registered env class (with a name only).
        backend: ``"cpu"`` or ``"pycuda"``.
        flatten_agents: treat each (replica, agent) pair as a sub-env (multi-agent envs).
        copy: return copies of observations and rewards instead of views of the store.
        output: ``"torch"`` (tensors on the store's device) or ``"numpy"`` (NumPy arrays on the host,
            for Gymnasium's vector wrappers and NumPy-based trainers).
        autoreset_mode: ``AutoresetMode.SAME_STEP`` (default), ``NEXT_STEP`` or ``DISABLED`` (or
            their string values, e.g. ``"NextStep"``); see the module docstring.
        redraw_start_states, invalid_actions: see the module docstring (Seeding, Invalid actions).
        device_id: CUDA device of the pycuda backend.
        env_registrar: where ``env`` names are looked up (default: :data:`warp_drive.env.env_registrar`).
        blocks_per_env: CUDA blocks per env.

    Raises:
        ConfigError: a multi-agent env without ``flatten_agents``, agents with different spaces,
            unsupported spaces, an unknown ``output``, or bad arguments.
    """

    #: Class defaults; each instance holds its own copy.
    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        env: str | CUDAEnvironmentContext | EnvWrapper,
        num_envs: int | None = None,
        env_config: Mapping[str, Any] | None = None,
        backend: str = "cpu",
        *,
        flatten_agents: bool = False,
        copy: bool = False,
        output: str = "torch",
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        redraw_start_states: bool = True,
        invalid_actions: str = "raise",
        device_id: int | None = None,
        blocks_per_env: int | None = None,
        env_registrar: EnvironmentRegistrar | None = None,
    ) -> None:
        invalid_actions_mode(invalid_actions, type(self).__name__)  # refuse before compiling anything
        if output not in OUTPUTS:
            raise ConfigError(f"output={output!r} is unknown; use one of {', '.join(map(repr, OUTPUTS))}")
        try:
            mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        except ValueError:
            raise ConfigError(
                f"autoreset_mode={autoreset_mode!r} is unknown; use one of "
                f"{', '.join(repr(m.value) for m in AutoresetMode)} or gymnasium.vector.AutoresetMode"
            ) from None
        if isinstance(env, str):  # build the instance first: refuse before compiling anything
            env, env_config = make_env(env, env_config, resolve_backend(backend), env_registrar), None
        inner: Any = env.env if isinstance(env, EnvWrapper) else env
        if getattr(inner, "num_agents", None) is not None:
            self._check_agents(int(inner.num_agents), flatten_agents, type(inner).__name__)
        wrapper = build_wrapper(env, env_config, backend, num_envs, device_id, blocks_per_env)
        n_agents = int(wrapper.n_agents)
        self._check_agents(n_agents, flatten_agents, wrapper.name)
        self.wrapper = wrapper
        self.backend = wrapper.env_backend
        self.flatten_agents = bool(flatten_agents)
        self.copy = bool(copy)
        self.output = output
        self.redraw_start_states = bool(redraw_start_states)
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.autoreset_mode = mode
        self.render_mode = None

        inner = wrapper.env
        ids = agent_ids(inner)
        obs_spaces = [to_gymnasium(inner.observation_space[i]) for i in ids]
        act_spaces = [to_gymnasium(inner.action_space[i]) for i in ids]
        if any(s != obs_spaces[0] for s in obs_spaces) or any(s != act_spaces[0] for s in act_spaces):
            raise ConfigError(
                f"{wrapper.name}: flatten_agents needs every agent to share one observation space and one "
                "action space; these agents differ"
            )
        self.single_observation_space: spaces.Space = obs_spaces[0]
        self.single_action_space: spaces.Space = act_spaces[0]
        if not isinstance(self.single_observation_space, spaces.Box):
            raise ConfigError(
                f"{wrapper.name}: observation space {self.single_observation_space} is not a Box; the vector "
                "adapter returns one float32 tensor of observations"
            )
        self._heads, _ = action_layout(self.single_action_space)
        self._check_actions = ActionChecker(self.single_action_space, invalid_actions, type(self).__name__,
                                            wrapper.cuda_data_manager.data_on_device_via_torch(Constants.ACTIONS).dtype)

        self.num_replicas = int(wrapper.n_envs)
        self.num_agents = n_agents
        self.num_envs = self.num_replicas * n_agents
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

        dm = wrapper.cuda_data_manager
        self.data_manager = dm
        self.device: torch.device = dm.device
        self._episode_length = int(wrapper.episode_length)
        obs_store = dm.data_on_device_via_torch(Constants.OBSERVATIONS)
        obs_shape = tuple(self.single_observation_space.shape)
        if tuple(obs_store.shape) != (self.num_replicas, n_agents, *obs_shape):
            raise DataShapeError(
                f"'{Constants.OBSERVATIONS}' has shape {tuple(obs_store.shape)}; expected "
                f"{(self.num_replicas, n_agents, *obs_shape)} from the observation space"
            )
        if obs_store.dtype != torch.float32 or self.single_observation_space.dtype != np.float32:
            logger.info(
                "%s: observations are stored as %s; the observation space says %s",
                wrapper.name, obs_store.dtype, self.single_observation_space.dtype,
            )
        self._obs = obs_store.view(self.num_envs, *obs_shape)
        self._rewards = dm.data_on_device_via_torch(Constants.REWARDS).view(self.num_envs)
        self._actions = dm.data_on_device_via_torch(Constants.ACTIONS)  # (E, N, heads)
        self._done, self._timestep, self._truncated = done_tensors(dm)
        if tuple(self._actions.shape) != (self.num_replicas, n_agents, self._heads):
            raise DataShapeError(
                f"'{Constants.ACTIONS}' has shape {tuple(self._actions.shape)}; expected "
                f"{(self.num_replicas, n_agents, self._heads)}"
            )
        self._needs_reset = True
        #: Host values of the env's shared arrays (roles, pools) as last written to the store.
        self._shared_on_store = shared_host_values(wrapper)
        #: NEXT_STEP: replicas whose episode ended in the previous step (their next step is a reset).
        self._pending = torch.zeros(self.num_replicas, dtype=torch.bool, device=self.device)

    @staticmethod
    def _check_agents(n_agents: int, flatten_agents: bool, name: str) -> None:
        if n_agents != 1 and not flatten_agents:
            raise ConfigError(
                f"{name} has {n_agents} agents per env; WarpDriveVectorEnv runs single-agent envs. Pass "
                "flatten_agents=True to treat each (env, agent) pair as one sub-env, or use "
                "WarpDrivePettingZooEnv / the warp_drive Trainer for multi-agent training"
            )

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor | np.ndarray, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``).

        Args:
            seed: an int (replica ``e`` draws its initial state with seed ``seed + e``), a list of
                one seed (or None) per replica, or None (see the module docstring).
            options: ``{"reset_mask": bool array (num_envs,)}`` resets only the masked sub-envs
                (with ``flatten_agents`` the mask must select whole replicas). Other keys are
                refused (ConfigError).

        Returns:
            ``(observations, {})``: observations ``(num_envs, *obs_shape)`` on the device (a NumPy
            array with ``output="numpy"``).

        Raises:
            ConfigError: a bad seed or reset mask.
        """
        if self.closed:
            raise InteropError("the vector env is closed")
        options = dict(options or {})
        mask = self._replica_mask(options.pop("reset_mask", None))
        if options:
            key = sorted(options, key=str)[0]
            match = closest_match(str(key), ["reset_mask"])
            raise ConfigError(f"reset(options=...) got the unknown key {key!r}" + (f"; did you mean {match!r}?" if match else "")
                              + "; the only option is 'reset_mask'")
        rows = list(range(self.num_replicas)) if mask is None else [int(i) for i in np.flatnonzero(mask)]
        seeds = self._replica_seeds(seed)
        pool_seed = next((s for s in seeds if s is not None), None)
        if pool_seed is not None or self.redraw_start_states:
            shared_seed = pool_seed if mask is None else None  # roles, pools: only when all restart
            install_start_states(self.wrapper, rows, [seeds[r] for r in rows], shared_seed, self._shared_on_store)
        if pool_seed is not None:
            super().reset(seed=pool_seed)
            self.wrapper.init_reset_pool(pool_seed)
            self.action_space.seed(pool_seed)
            self.single_action_space.seed(pool_seed)
        if mask is None:
            self.wrapper.reset_all_envs()  # device force reset of every replica
            self._pending.zero_()
        else:
            selected = torch.as_tensor(mask, device=self.device)
            self._done[selected] = 1
            self.wrapper.reset_only_done_envs()
            self._pending[selected] = False
        self._needs_reset = False
        return self._view(self._obs), {}

    def step(
        self, actions: Any
    ) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step every sub-env once; ended sub-envs are reset in the same call (same-step autoreset).

        Args:
            actions: ``num_envs`` actions (torch tensor or array-like; see the module docstring).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)`` as device tensors (NumPy
            arrays with ``output="numpy"``); with SAME_STEP autoreset ``infos`` holds ``final_obs``
            / ``_final_obs`` and ``final_info`` / ``_final_info`` (``{}`` in the other modes).

        Raises:
            InteropError: ``reset()`` was not called, or the env is closed.
            DataShapeError / DataTypeError: actions of the wrong shape or kind.
            InvalidActionError: actions outside the action space (``invalid_actions="raise"``).
        """
        if self.closed:
            raise InteropError("the vector env is closed")
        if self._needs_reset:
            raise InteropError("call reset() before the first step()")
        if self.autoreset_mode is AutoresetMode.DISABLED:
            self._refuse_ended_replicas()
        self._write_actions(actions)
        self.wrapper.step_all_envs()
        terminated, truncated = split_done(self._done, self._timestep, self._episode_length, self._truncated)
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            return self._finish_next_step(terminated, truncated)
        terminated, truncated = self._per_sub_env(terminated), self._per_sub_env(truncated)
        ended = terminated | truncated
        if self.autoreset_mode is AutoresetMode.DISABLED:
            return self._view(self._obs), self._view(self._rewards), *self._host(terminated, truncated), {}
        final_obs = self._obs.clone()
        self.wrapper.reset_only_done_envs()
        terminated, truncated, ended, final_obs = self._host(terminated, truncated, ended, final_obs)
        infos = {"final_obs": final_obs, "_final_obs": ended, "final_info": {}, "_final_info": ended}
        return self._view(self._obs), self._view(self._rewards), terminated, truncated, infos

    def _finish_next_step(self, terminated: torch.Tensor, truncated: torch.Tensor) -> tuple[Any, Any, Any, Any, dict]:
        """NEXT_STEP bookkeeping after the env step (device ops only, no host sync)."""
        pending = self._pending
        terminated, truncated = terminated & ~pending, truncated & ~pending
        ended = terminated | truncated
        obs = self._obs.clone()  # final observations of the replicas that ended now
        rewards = self._rewards.clone().masked_fill_(self._per_sub_env(pending), 0.0)
        # ended replicas restart now, pending ones again: the store then holds their reset state (module docstring)
        self._done.masked_fill_(pending, 1)
        self.wrapper.reset_only_done_envs()
        rows = self._per_sub_env(pending).view(-1, *([1] * (obs.dim() - 1)))
        obs = torch.where(rows, self._obs, obs)
        self._pending = ended
        terminated, truncated = self._per_sub_env(terminated), self._per_sub_env(truncated)
        return *self._host(obs, rewards, terminated, truncated), {}

    def _refuse_ended_replicas(self) -> None:
        ended = torch.nonzero(self._done > 0).flatten()
        if ended.numel():
            raise InteropError(
                f"autoreset_mode=DISABLED: replicas {ended[:5].tolist()} ended and were not reset; call "
                "reset(options={'reset_mask': mask}) for the sub-envs that ended before step()"
            )

    def _per_sub_env(self, per_replica: torch.Tensor) -> torch.Tensor:
        """(E,) -> (num_envs,): every agent of a replica shares its replica's value."""
        return per_replica.repeat_interleave(self.num_agents) if self.num_agents > 1 else per_replica

    def _host(self, *tensors: torch.Tensor) -> tuple[Any, ...]:
        """The tensors as NumPy arrays with ``output="numpy"``, unchanged otherwise."""
        if self.output == "numpy":
            return tuple(t.cpu().numpy() for t in tensors)
        return tensors

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release beyond the data store, which is freed with the adapter."""

    # ------------------------------------------------------------------ helpers
    @property
    def env(self) -> CUDAEnvironmentContext:
        """The wrapped warp_drive env."""
        return self.wrapper.env

    def _view(self, t: torch.Tensor) -> torch.Tensor | np.ndarray:
        """``t`` as returned: the store's tensor or a copy (``copy``), as a tensor or NumPy array (``output``)."""
        if self.output == "numpy":
            if t.device.type != "cpu":
                return t.cpu().numpy()  # one device-to-host copy
            return t.numpy().copy() if self.copy else t.numpy()
        return t.clone() if self.copy else t

    def _replica_seeds(self, seed: Any) -> list[int | None]:
        E = self.num_replicas
        if seed is None:
            return [None] * E
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            base = check_seed(seed)
            return [base + e for e in range(E)]
        if isinstance(seed, Sequence) and not isinstance(seed, str):
            if len(seed) != E:
                raise ConfigError(f"seed has {len(seed)} entries; give one per env replica ({E}) or one int")
            return [None if s is None else check_seed(s, "seed entry") for s in seed]
        raise ConfigError(f"seed={seed!r} must be None, an int, or a list of {E} ints/None")

    def _replica_mask(self, reset_mask: Any) -> np.ndarray | None:
        if reset_mask is None:
            return None
        if isinstance(reset_mask, torch.Tensor):
            reset_mask = reset_mask.detach().cpu().numpy()
        mask = np.asarray(reset_mask)
        if mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
            raise ConfigError(
                f"options['reset_mask'] must be a bool array of shape ({self.num_envs},); got "
                f"dtype {mask.dtype} and shape {mask.shape}"
            )
        per_replica = mask.reshape(self.num_replicas, self.num_agents)
        if not np.all(per_replica == per_replica[:, :1]):
            raise ConfigError(
                "options['reset_mask'] selects some agents of a replica but not others; a replica "
                "resets all its agents together, so mask whole replicas"
            )
        mask = per_replica[:, 0]
        if not mask.any():
            raise ConfigError("options['reset_mask'] selects no sub-env; set at least one True")
        return mask

    def _write_actions(self, actions: Any) -> None:
        target = self._actions
        src = as_tensor(actions, type(self).__name__)
        if src.dim() == 0 or src.shape[0] != self.num_envs or src.numel() != self.num_envs * self._heads:
            raise DataShapeError(
                f"actions have shape {tuple(src.shape)}; expected {self.num_envs} rows of "
                f"{self._heads} value(s) each (action_space.shape = {self.action_space.shape})"
            )
        src = self._check_actions(src.reshape(self.num_envs, self._heads), self._sub_env_label)
        target.copy_(src.to(device=target.device).reshape(target.shape))

    def _sub_env_label(self, i: int) -> str:
        """Sub-env ``i`` as error messages name it (with its replica and agent when agents are flattened)."""
        if self.num_agents == 1:
            return f"sub-env {i}"
        return f"sub-env {i} (replica {i // self.num_agents}, agent {i % self.num_agents})"
