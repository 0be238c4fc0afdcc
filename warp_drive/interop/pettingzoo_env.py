"""PettingZoo ``ParallelEnv`` over ONE replica of a warp_drive env.

The adapter runs one replica (``num_envs = 1``) on either backend and converts each step to
PettingZoo's per-agent dicts on the host (this adapter copies to the host by design: it exists for
PettingZoo tooling, tests and evaluation, not for throughput; use
:class:`~warp_drive.interop.gymnasium_vector.WarpDriveVectorEnv` or the trainer for that).

Example::

    import example_envs  # the example envs register themselves (by name) in warp_drive's env registrar
    from warp_drive.interop import WarpDrivePettingZooEnv

    env = WarpDrivePettingZooEnv("tag_gridworld", {"num_taggers": 3, "episode_length": 50})
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)

Semantics:

* ``possible_agents`` are ``"agent_<id>"`` for the env's agent ids in data-store order.
* **Termination / truncation.** The replica's ``_done_`` flag ends the episode for every agent
  still in the game: truncated or terminated as :func:`warp_drive.vocab.done.split_done` tells.
* **Agents that leave early.** If the env has a per-agent "in the game" flag (``active_flag``;
  by default the env's ``active_agent_flag`` when the data store holds it with shape ``(1, N)``,
  as TagContinuous's ``still_in_the_game``), an agent whose flag drops to 0 is *terminated* on that step and removed
  from ``agents``; later steps neither expect nor report it (the env itself ignores agents out
  of the game). Envs without such a flag (TagGridWorld, the classic-control envs, DummyEnv) end
  all agents together.
* After the episode ends ``agents`` is empty; call ``reset()``. There is no autoreset.
* **Seeding.** ``reset(seed=s)`` re-seeds everything random in the env as if it had been built
  with ``seed=s`` (:func:`~warp_drive.interop._common.reseed_env`: TagContinuous's roles, reset
  pools, the start-state RNG; the arrays drawn once are rewritten on the store), draws a new
  initial state (the classic-control envs then draw exactly gymnasium's ``reset(seed=s)`` initial
  state), re-seeds the reset-pool draws (Philox key) with ``s``, and seeds each agent's action and
  observation space with ``s + index``. Two adapters built without an env seed therefore run
  identically after the same ``reset(seed=s)`` (PettingZoo's ``parallel_seed_test``). ``reset()``
  without a seed draws the next initial state from the env's RNG stream
  (``redraw_start_states=True``, the default) or, with ``redraw_start_states=False``, restores the
  replica's saved initial state on the device (WarpDrive's own reset). Envs with fixed starts
  (TagGridWorld) draw the same state every time.
* **Invalid actions** (``invalid_actions=``) are checked on the host before the push, for all
  live agents at once: ``"raise"`` (the default) refuses the step with
  :class:`~warp_drive.errors.InvalidActionError` naming the agents, ``"clip"`` clips into the
  space. What counts as invalid, and how values are clipped: :mod:`warp_drive.interop._actions`.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

try:
    from pettingzoo import ParallelEnv
except ImportError as err:  # pragma: no cover - depends on the install
    raise ImportError(
        "warp_drive.interop.pettingzoo_env needs pettingzoo: `pip install 'pettingzoo>=1.24'`, or from a "
        "clone of warp_drive `pip install -e '.[interop]'`"
    ) from err

from warp_drive.vocab.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext
from warp_drive.vocab.registrar import EnvironmentRegistrar
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.interop._actions import ActionChecker, as_tensor, excerpt, invalid_actions_mode
from warp_drive.interop._common import (
    InteropError,
    agent_ids,
    build_wrapper,
    check_seed,
    done_tensors,
    install_start_states,
    shared_host_values,
    split_done,
)
from warp_drive.utils.spaces import to_gymnasium

logger = logging.getLogger(__name__)


class WarpDrivePettingZooEnv(ParallelEnv):
    """One replica of a warp_drive env as a PettingZoo ``ParallelEnv`` (see the module docstring).

    Args:
        env: an env instance, the name of an env in ``env_registrar`` (``"tag_gridworld"``, ...
            once ``example_envs`` is imported), or an :class:`~warp_drive.env.env_wrapper.EnvWrapper`
            built with ``num_envs=1``.
        env_config: keyword arguments of the registered env class (with a name only).
        backend: ``"cpu"`` (NumPy reference step) or ``"pycuda"`` (CUDA kernels).
        device_id: CUDA device of the pycuda backend (default: the current device).
        blocks_per_env: CUDA blocks per env (default: enough for the env's agents).
        render_mode: None or ``"ansi"`` (``render()`` returns a text summary of the replica).
        redraw_start_states: see the module docstring (Seeding).
        active_flag: data name of a per-agent ``(1, N)`` int flag that is 0 once an agent left the
            game; ``"auto"`` uses the env's ``active_agent_flag`` when present, None disables.
        env_registrar: where ``env`` names are looked up (default: :data:`warp_drive.env.env_registrar`).
        invalid_actions: ``"raise"`` (default) or ``"clip"`` (see the module docstring).

    Raises:
        ConfigError: bad arguments, an EnvWrapper with several replicas, an unknown active flag,
            or an env whose observations are not one flat array per agent.
    """

    #: Class defaults; each instance holds its own copy (with the env's name).
    metadata: dict[str, Any] = {  # noqa: RUF012
        "name": "warp_drive",
        "is_parallelizable": True,
        "render_modes": ["ansi"],
    }

    def __init__(
        self,
        env: str | CUDAEnvironmentContext | EnvWrapper,
        env_config: Mapping[str, Any] | None = None,
        backend: str = "cpu",
        *,
        device_id: int | None = None,
        blocks_per_env: int | None = None,
        render_mode: str | None = None,
        redraw_start_states: bool = True,
        active_flag: str | None = "auto",
        env_registrar: EnvironmentRegistrar | None = None,
        invalid_actions: str = "raise",
    ) -> None:
        invalid_actions_mode(invalid_actions, type(self).__name__)
        if isinstance(env, EnvWrapper) and env.n_envs != 1:
            raise ConfigError(
                f"WarpDrivePettingZooEnv wraps one replica; the EnvWrapper runs {env.n_envs}. Build it "
                "with num_envs=1, or use WarpDriveVectorEnv for many replicas"
            )
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError(f"render_mode={render_mode!r} is not supported; use None or 'ansi'")
        self.wrapper = build_wrapper(env, env_config, backend, 1, device_id, blocks_per_env, env_registrar)
        self.backend = self.wrapper.env_backend
        self.render_mode = render_mode
        self.redraw_start_states = bool(redraw_start_states)
        self.closed = False
        inner: Any = self.wrapper.env
        self.metadata = {**type(self).metadata, "name": f"warp_drive_{inner.name or type(inner).__name__}"}

        self._env_ids = agent_ids(inner)
        self.possible_agents: list[str] = [f"agent_{i}" for i in self._env_ids]
        self.agents: list[str] = []
        self._index = {name: k for k, name in enumerate(self.possible_agents)}
        # one space object per agent (the env may share one object among agents): per-agent seeding
        named = list(zip(self.possible_agents, self._env_ids))
        self._observation_spaces = {name: copy.deepcopy(to_gymnasium(inner.observation_space[i])) for name, i in named}
        self._action_spaces = {name: copy.deepcopy(to_gymnasium(inner.action_space[i])) for name, i in named}

        dm = self.wrapper.cuda_data_manager
        self._dm = dm
        self._episode_length = int(self.wrapper.episode_length)
        self._num_agents_total = len(self.possible_agents)
        obs_shape = dm.get_shape(Constants.OBSERVATIONS)
        if obs_shape[:2] != (1, self._num_agents_total):
            raise DataShapeError(
                f"'{Constants.OBSERVATIONS}' has shape {obs_shape}; expected (1, {self._num_agents_total}, ...)"
            )
        self._action_shape = dm.get_shape(Constants.ACTIONS)
        self._action_dtype = np.int32 if "int" in dm.get_dtype(Constants.ACTIONS) else np.float32
        # the store's action placeholder is shared: every agent has the same action space
        self._check_actions = ActionChecker(self._action_spaces[self.possible_agents[0]], invalid_actions,
                                            type(self).__name__, torch.int32 if self._action_dtype == np.int32 else torch.float32)
        self._active_flag = self._resolve_active_flag(active_flag)
        self._needs_reset = True
        #: Host values of the env's shared arrays (roles, pools) as last written to the store.
        self._shared_on_store = shared_host_values(self.wrapper)

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (the same object on every call)."""
        return self._observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent`` (the same object on every call)."""
        return self._action_spaces[self._check_agent(agent)]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start a new episode of the replica.

        Args:
            seed: re-seeds the env's host RNG, the reset-pool draws and the agents' spaces (module
                docstring); None continues the env's RNG stream.
            options: accepted for API compatibility; no option is used.

        Returns:
            ``(observations, infos)``: a float32 array and an empty dict per agent.
        """
        self._check_open()
        if seed is not None:
            seed = check_seed(seed)
        if options:
            logger.debug("WarpDrivePettingZooEnv.reset ignores options %s", sorted(options))
        if seed is not None or self.redraw_start_states:
            install_start_states(self.wrapper, [0], [seed], shared_seed=seed, known=self._shared_on_store)
        if seed is not None:
            self.wrapper.init_reset_pool(seed)
            for k, name in enumerate(self.possible_agents):
                self._action_spaces[name].seed(seed + k)
                self._observation_spaces[name].seed(seed + k)
        self.wrapper.reset_all_envs()  # device force reset: saved copies / pool draws, done = t = 0
        self.agents = list(self.possible_agents)
        self._needs_reset = False
        obs = self._dm.pull_data_from_device(Constants.OBSERVATIONS)[0]
        return {name: obs[self._index[name]].copy() for name in self.agents}, {name: {} for name in self.agents}

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Step the replica once.

        Args:
            actions: an action for every agent in ``agents`` (Discrete: an int; MultiDiscrete: one
                int per head; Box: an array of the space's shape). Actions of agents that already
                left are ignored; agents out of the game get action 0 (their no-op).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, keyed by the agents that
            were in ``agents`` before this step.

        Raises:
            InteropError: no episode is running (call ``reset()``).
            ConfigError: an action is missing or belongs to an unknown agent.
            InvalidActionError: an action is outside its space (``invalid_actions="raise"``) or not
                an integer for a Discrete / MultiDiscrete space.
            DataShapeError / DataTypeError: an action of the wrong size or kind.
        """
        self._check_open()
        if self._needs_reset or not self.agents:
            raise InteropError("no episode is running; call reset() before step()")
        if not isinstance(actions, Mapping):
            raise ConfigError(f"actions must be a dict agent -> action, got {type(actions).__name__}")
        self._dm.assign(Constants.ACTIONS, self._encode_actions(actions))
        self.wrapper.step_all_envs()

        dm = self._dm
        obs = dm.pull_data_from_device(Constants.OBSERVATIONS)[0]
        rewards = dm.pull_data_from_device(Constants.REWARDS)[0]
        done_t, timestep_t, cut_t = done_tensors(dm)
        terminated_t, truncated_t = split_done(done_t, timestep_t, self._episode_length, cut_t)
        env_terminated, env_truncated = bool(terminated_t[0]), bool(truncated_t[0])
        active = None if self._active_flag is None else dm.pull_data_from_device(self._active_flag)[0] != 0

        live = self.agents
        left = {name: active is not None and not active[self._index[name]] for name in live}
        out_term = {name: env_terminated or left[name] for name in live}
        out_trunc = {name: env_truncated and not left[name] for name in live}
        self.agents = [name for name in live if not (out_term[name] or out_trunc[name])]
        if not self.agents:
            self._needs_reset = True
        return ({name: obs[self._index[name]].copy() for name in live},
                {name: float(rewards[self._index[name]]) for name in live}, out_term, out_trunc,
                {name: {} for name in live})

    def render(self) -> str | None:
        """``"ansi"``: a text summary (timestep, live agents, per-agent reward); None otherwise."""
        if self.render_mode is None:
            logger.warning("render() was called with render_mode=None; pass render_mode='ansi'")
            return None
        t = int(self._dm.pull_data_from_device(Constants.TIMESTEP)[0])
        rewards = self._dm.pull_data_from_device(Constants.REWARDS)[0]
        lines = [f"{self.metadata['name']} t={t}/{self._episode_length} live={len(self.agents)}"]
        lines += [f"  {name}: reward={float(rewards[self._index[name]]):+.4f}" for name in self.agents]
        return "\n".join(lines)

    def close(self) -> None:
        """Mark the adapter closed (the data store is freed with the adapter)."""
        self.closed = True
        self.agents = []

    # ------------------------------------------------------------------ helpers
    @property
    def env(self) -> CUDAEnvironmentContext:
        """The wrapped warp_drive env."""
        return self.wrapper.env

    @property
    def data_manager(self) -> Any:
        """The data store of the replica."""
        return self._dm

    def _check_agent(self, agent: str) -> str:
        if agent not in self._index:
            raise ConfigError(f"unknown agent {agent!r}; possible agents: {self.possible_agents}")
        return agent

    def _check_open(self) -> None:
        if self.closed:
            raise InteropError("the env is closed; build a new WarpDrivePettingZooEnv")

    def _resolve_active_flag(self, active_flag: str | None) -> str | None:
        n = self._num_agents_total

        def fits(name: str | None) -> bool:
            return bool(name) and self._dm.is_data_on_device(name) and self._dm.get_shape(name) == (1, n)

        if active_flag == "auto":
            name = getattr(self.wrapper.env, "active_agent_flag", None)
            return name if fits(name) else None
        if active_flag is not None and not fits(active_flag):
            raise ConfigError(
                f"active_flag={active_flag!r} must name a (1, {n}) array of the data store; "
                f"use 'auto' or None"
            )
        return active_flag

    def _encode_actions(self, actions: Mapping[str, Any]) -> np.ndarray:
        out = np.zeros(self._action_shape, self._action_dtype)
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ConfigError(f"no action for live agents {missing}; step() needs one per agent in env.agents")
        live: list[str] = []
        rows: list[torch.Tensor] = []
        heads = self._action_shape[-1]
        for name, action in actions.items():
            if name not in self._index:
                raise ConfigError(f"action for unknown agent {name!r}; possible agents: {self.possible_agents}")
            if name not in self.agents:
                logger.debug("ignoring the action of %s, which is no longer in the game", name)
                continue
            value = as_tensor(action, type(self).__name__).cpu()
            if value.numel() != heads:
                raise DataShapeError(
                    f"{name}: action {excerpt(repr(action))} has {value.numel()} value(s); {self._action_spaces[name]} "
                    f"takes {heads} per agent"
                )
            live.append(name)
            rows.append(value.reshape(heads))
        if live:
            dtype = functools.reduce(torch.promote_types, (r.dtype for r in rows))
            checked = self._check_actions(torch.stack([r.to(dtype) for r in rows]), live.__getitem__).numpy()
            out[0, [self._index[name] for name in live]] = checked
        return out
