"""Shared base of the MPE envs: world state, host reset, start states and the step skeleton.

Each env replica's world lives in the data store as float32 arrays, reset-copied (so (E, ...) on
the store): ``agent_pos`` and ``agent_vel`` (E, N, 2) and ``landmark_pos`` (E, L, 2), plus any
scenario state (:meth:`MpeEnv.extra_state`). One step (:meth:`MpeEnv.numpy_step`, mirrored by the
env's ``Cuda<Name>Step``, one block per env and one thread per agent):

1. the scenario reads its actions (:meth:`MpeEnv.apply_actions`: movement actions, words);
2. physics (:mod:`example_envs.mpe.physics`): action forces, contact forces, integration;
3. rewards (:meth:`MpeEnv.compute_rewards`) and observations (:meth:`MpeEnv.observe`) of the new
   state, as ``mpe2``'s ``SimpleEnv`` computes them after ``World.step``;
4. ``_timestep_ += 1``; ``_done_`` = ``_truncated_`` = 1 at ``episode_length``.

Start states: the host :meth:`MpeEnv.reset` draws ``mpe2``'s ``reset_world`` distribution from
``np.random.default_rng(seed)``, the generator ``mpe2``'s ``reset(seed=seed)`` builds, in the same
order, so it reproduces ``mpe2``'s first layout (as float32). With ``fresh_start_states`` (the
default) every replica and every episode draws its own layout on the device instead
(:meth:`MpeEnv.numpy_start_state` / ``<Name>StartState``), from the same distribution.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from example_envs import check_backend, check_bool, check_int
from example_envs.mpe import constants as C
from example_envs.mpe import physics
from warp_drive.env import ArraySpec, Constants, CUDAEnvironmentContext, DataFeed
from warp_drive.vocab.start_state import StartKey

F32 = np.float32
#: The world arrays every MPE env keeps per replica, and their shapes for one env.
WORLD_STATE = ("agent_pos", "agent_vel", "landmark_pos")
WORLD_SCHEMA: dict[str, ArraySpec] = {
    "agent_pos": ArraySpec(("num_agents", C.DIM_P)),
    "agent_vel": ArraySpec(("num_agents", C.DIM_P)),
    "landmark_pos": ArraySpec(("num_landmarks", C.DIM_P)),
}
#: The most agents one block (one env) holds.
MAX_AGENTS = 1024


class MpeEnv(CUDAEnvironmentContext):
    """Base class of the MPE envs (not registered itself). Subclasses set ``name``,
    ``cuda_source``, the kernel argument lists, ``num_agents``, ``num_landmarks``, ``movable``,
    ``obs_dim`` and the action spaces, and implement the scenario hooks."""

    writes_truncation = True  # every episode ends at the time limit (mpe2: truncation at max_cycles)
    numpy_step_is_env_separable = True
    #: the step kernel synchronises the agents of one env with ``__syncthreads``: one block per env (the
    #: wrapper refuses more, check_build builds one)
    max_blocks_per_env = 1
    #: The agents collide with each other (contact forces between every pair).
    agents_collide: ClassVar[bool] = False
    #: Radius of an agent (used only when ``agents_collide``).
    agent_size: ClassVar[float] = 0.0
    array_schema: ClassVar[dict[str, ArraySpec]] = WORLD_SCHEMA
    #: Names of the scenario's own per-env state arrays (:meth:`extra_state`).
    extra_state_names: ClassVar[tuple[str, ...]] = ()

    num_agents: int
    num_landmarks: int
    obs_dim: int
    movable: np.ndarray  # (N,) bool

    def _init_common(self, episode_length: Any, seed: Any, fresh_start_states: Any, env_backend: Any) -> None:
        env = self.name
        self.episode_length = check_int(env, "episode_length", episode_length, minimum=1)
        self.seed = None if seed is None else check_int(env, "seed", seed, minimum=0)
        self.fresh_start_states = check_bool(env, "fresh_start_states", fresh_start_states)
        self.env_backend = check_backend(env, env_backend)
        self.rng = np.random.default_rng(self.seed)
        box = spaces.Box(-np.inf, np.inf, shape=(self.obs_dim,), dtype=np.float32)
        self.observation_space = {i: box for i in range(self.num_agents)}
        self.timestep = 0
        self._host_state: dict[str, np.ndarray] | None = None

    def reseed(self, seed: int) -> None:
        """Re-seed the host ``reset()``'s generator and the device's start-state draws, as if the env
        had been built with ``seed``.

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        self.seed = check_int(self.name, "seed", seed, minimum=0)
        self.rng = np.random.default_rng(self.seed)

    @property
    def contact_distance(self) -> np.float32:
        """Distance below which two agents touch: the sum of their float32 radii."""
        return F32(self.agent_size) + F32(self.agent_size)

    # ------------------------------------------------------------------ scenario hooks
    def extra_state(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Scenario state of one env at the host reset, drawn from ``rng`` before the positions
        (``reset_world``'s order); default none."""
        return {}

    def draw_extra_start(self, state: Mapping[str, np.ndarray], rows: np.ndarray, key: StartKey) -> None:
        """Draw the scenario's start state of the reset envs ``rows`` in place (default none)."""

    def apply_actions(self, state: Mapping[str, np.ndarray], actions: np.ndarray) -> np.ndarray:
        """Read (E, N) discrete actions: write any scenario state they set (words) and return the
        movement actions (E, N) that :func:`~example_envs.mpe.physics.move_force` decodes."""
        return actions

    def compute_rewards(self, state: Mapping[str, np.ndarray]) -> np.ndarray:
        """(E, N) float32 rewards of the world state after the step."""
        raise NotImplementedError

    def observe(self, state: Mapping[str, np.ndarray]) -> np.ndarray:
        """(E, N, obs_dim) float32 observations of the world state ``state`` (arrays with an env
        axis)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ host reset and data
    def reset(self) -> dict[int, np.ndarray]:
        """Draw one env's start state on the host (``mpe2``'s ``reset_world`` from ``self.rng``);
        returns ``{agent_id: obs}`` at t = 0."""
        extra = self.extra_state(self.rng)
        uniform = lambda: self.rng.uniform(C.START_LOW, C.START_HIGH, C.DIM_P)  # noqa: E731
        agent_pos = np.array([uniform() for _ in range(self.num_agents)], F32)
        landmark_pos = np.array([uniform() for _ in range(self.num_landmarks)], F32)
        self._host_state = {
            "agent_pos": agent_pos,
            "agent_vel": np.zeros((self.num_agents, C.DIM_P), F32),
            "landmark_pos": landmark_pos,
            **extra,
        }
        self.timestep = 0
        obs = self.observe({k: v[None] for k, v in self._host_state.items()})[0]
        return {i: obs[i] for i in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        """The world and scenario state (reset-copied) and the scenario's scalars."""
        if self._host_state is None:
            self.reset()
        feed = DataFeed()
        for name, value in self._host_state.items():
            feed.add_data(name, value.copy(), save_copy_and_apply_at_reset=True)
        for name, value in self.scalar_data().items():
            feed.add_data(name, float(value))
        return feed

    def scalar_data(self) -> dict[str, float]:
        """Float parameters passed to the kernels by value (default none)."""
        return {}

    def cuda_constants(self) -> dict[str, Any]:
        """Compile-time constants of ``mpe.cuh`` and the scenario's kernel."""
        return {
            "kDimP": C.DIM_P,
            "kNumLandmarks": self.num_landmarks,
            "kObsDim": self.obs_dim,
            "kDt": float(physics.DT),
            "kVelocityKeep": float(physics.VELOCITY_KEEP),
            "kContactForce": float(physics.CONTACT_FORCE),
            "kContactMargin": float(physics.CONTACT_MARGIN),
            "kAccel": float(physics.ACCEL),
            "kContactDistance": float(self.contact_distance),
            "kAgentsCollide": bool(self.agents_collide),
            "kStartLow": float(C.START_LOW),
            "kStartHigh": float(C.START_HIGH),
        }

    # ------------------------------------------------------------------ NumPy twin (CPU backend)
    def _state(self, data: Mapping[str, Any], rows: Any = slice(None)) -> dict[str, np.ndarray]:
        names = (*WORLD_STATE, *self.extra_state_names)
        return {name: data[name][rows] for name in names}

    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """Step every env of ``data`` in place (module docstring). CUDA twin: ``Cuda<Name>Step``."""
        state = self._state(data)
        moves = self.apply_actions(state, data[Constants.ACTIONS][..., 0])
        force = physics.move_force(moves, self.movable)
        if self.agents_collide:
            physics.add_contact_forces(state["agent_pos"], force, self.contact_distance)
        physics.integrate(state["agent_pos"], state["agent_vel"], force, self.movable)
        data[Constants.REWARDS][...] = self.compute_rewards(state)
        data[Constants.OBSERVATIONS][...] = self.observe(state)
        physics.end_step(data)

    def numpy_start_state(self, data: Mapping[str, Any], rows: np.ndarray, key: StartKey) -> None:
        """Start-state hook: new agent and landmark positions of the reset envs ``rows``
        (:func:`~example_envs.mpe.physics.start_positions`), the scenario's own draws, and the
        observations at t = 0; velocities and words keep their restored zeros. CUDA twin:
        ``<Name>StartState``."""
        data["agent_pos"][rows], data["landmark_pos"][rows] = physics.start_positions(
            key, self.num_agents, self.num_landmarks
        )
        self.draw_extra_start(data, rows, key)
        data[Constants.OBSERVATIONS][rows] = self.observe(self._state(data, rows))
