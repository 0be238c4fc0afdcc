"""Tag (grid world): N - 1 taggers chase one runner on an (L+1) x (L+1) integer grid.

Dual mode: the same class steps on the GPU (``tag_gridworld_step.cu``) and on the CPU
(:meth:`TagGridWorld.numpy_step`, vectorised over envs and agents). The NumPy code is the
specification; each ``__device__`` helper names what it mirrors. Layouts and rewards: README.md.

One step:

1. ``_timestep_ += 1``; every agent moves by its action (``constants.ACTIONS``); positions are
   clipped to [0, L]; a clipped move is a wall hit.
2. The runner is tagged when at least one tagger stands on its cell (after all moves).
3. Rewards: tagged -> taggers ``+tag_reward_for_tagger``, runner ``-tag_penalty_for_runner``;
   otherwise taggers ``-step_cost_for_tagger``, runner ``+step_cost_for_tagger``; a wall hit adds
   ``-wall_hit_penalty``.
4. Observations of the new state; ``_done_`` = 1 when tagged or t >= T; ``_truncated_`` = 1 when
   t >= T and the runner was not tagged (the time limit ended the episode), else 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from example_envs import (
    check_backend,
    check_bool,
    check_float,
    check_int,
    reject_unknown_kwargs,
)
from example_envs.tag_gridworld import constants as C
from warp_drive.env import ArraySpec, Constants, CUDAEnvironmentContext, DataFeed
from warp_drive.vocab.start_state import StartKey
from warp_drive.utils.philox import scale_bits_to_range
from warp_drive.errors import ConfigError, SpaceMismatchError, UsageError

F32 = np.float32
#: Phase kernels (several blocks per env), in launch order, each with only the arguments it uses.
PHASE_KERNELS: dict[str, tuple[Any, ...]] = {
    "CudaTagGridWorldMove": ("loc_x", "loc_y", "num_taggers_on_runner", Constants.ACTIONS, Constants.REWARDS,
                             Constants.TIMESTEP, "wall_hit_penalty", "world_boundary"),
    "CudaTagGridWorldTag": ("loc_x", "loc_y", "num_taggers_on_runner"),
    "CudaTagGridWorldFinish": ("loc_x", "loc_y", "num_taggers_on_runner", Constants.OBSERVATIONS, Constants.REWARDS,
                               Constants.DONE, Constants.TRUNCATED, Constants.TIMESTEP, "tag_reward_for_tagger",
                               "tag_penalty_for_runner", "step_cost_for_tagger", "world_boundary",
                               ("episode_length", "meta")),
}
#: Reward magnitudes passed to the kernels by value.
REWARD_PARAMS = ("wall_hit_penalty", "tag_reward_for_tagger", "tag_penalty_for_runner", "step_cost_for_tagger")
_DX = np.asarray(C.ACTION_DX, np.int32)
_DY = np.asarray(C.ACTION_DY, np.int32)


class TagGridWorld(CUDAEnvironmentContext):
    """Tag on a grid. Defaults: ``constants.DEFAULTS`` (keyword arguments only).

    Args:
        num_taggers: taggers (>= 1); N = num_taggers + 1, the runner is agent N - 1.
        grid_length: L (int, 1..32767); positions are ints in [0, L].
        episode_length: T (>= 1).
        starting_location_x, starting_location_y: (N,) int start cells, or None (taggers at
            (L // 2, L // 2), runner at (0, 0)).
        seed: seed of the env's ``np.random.default_rng`` (used for reset pools).
        wall_hit_penalty, tag_reward_for_tagger, tag_penalty_for_runner, step_cost_for_tagger:
            magnitudes (>= 0); signs are applied as in the module docstring.
        use_full_observation: 4 N + 1 values (every agent) or 6 (self and target).
        env_backend: "cpu" or "pycuda" (overwritten by the EnvWrapper).
        fresh_start_states: True -> every reset puts every agent on a uniformly drawn cell, a new
            layout per env replica and episode, drawn on the device (:meth:`numpy_start_state`
            and its CUDA twin ``TagGridWorldStartState``); False -> every reset restores the one
            start layout (2.7.1's semantics). Not combined with starting locations.

    Raises:
        ConfigError: an argument is unknown, has the wrong type or is out of range.
    """

    name = "TagGridWorld"
    cuda_source = Path(__file__).with_name("tag_gridworld_step.cu")
    numba_source = "example_envs.tag_gridworld.tag_gridworld_step_numba"
    numba_block_per_env = True  # the Numba step: one block per env, threads striding over the agents
    phase_kernels = PHASE_KERNELS  # used when an env spans several blocks
    writes_truncation = True  # _truncated_: the time limit ended the episode before a tag
    render_state_names = ("loc_x", "loc_y")
    array_schema = {
        "loc_x": ArraySpec(("num_agents",), "int32"),
        "loc_y": ArraySpec(("num_agents",), "int32"),
        "num_taggers_on_runner": ArraySpec((), "int32"),
        **{name: ArraySpec(()) for name in REWARD_PARAMS},
        "world_boundary": ArraySpec((), "int32"),
    }
    step_kernel_args = (
        "loc_x",
        "loc_y",
        "num_taggers_on_runner",
        Constants.ACTIONS,
        Constants.OBSERVATIONS,
        Constants.REWARDS,
        Constants.DONE,
        Constants.TRUNCATED,
        Constants.TIMESTEP,
        "wall_hit_penalty",
        "tag_reward_for_tagger",
        "tag_penalty_for_runner",
        "step_cost_for_tagger",
        "world_boundary",
        ("episode_length", "meta"),
    )
    #: Arguments of the start-state hook ``TagGridWorldStartState``.
    start_state_args = ("loc_x", "loc_y", Constants.OBSERVATIONS, "world_boundary")
    _accepted: tuple[str, ...] = tuple(C.DEFAULTS)

    def __init__(
        self,
        num_taggers: int = 10,
        grid_length: int = 10,
        episode_length: int = 100,
        starting_location_x: Any = None,
        starting_location_y: Any = None,
        seed: int | None = None,
        wall_hit_penalty: float = 0.1,
        tag_reward_for_tagger: float = 10.0,
        tag_penalty_for_runner: float = 2.0,
        step_cost_for_tagger: float = 0.01,
        use_full_observation: bool = True,
        env_backend: str = "cpu",
        fresh_start_states: bool = False,
        **unknown: Any,
    ) -> None:
        env = type(self).__name__
        reject_unknown_kwargs(env, unknown, self._accepted)
        self.num_taggers = check_int(env, "num_taggers", num_taggers, minimum=1)
        self.num_agents = self.num_taggers + 1
        self.grid_length = check_int(env, "grid_length", grid_length, minimum=1, maximum=C.MAX_GRID_LENGTH)
        self.episode_length = check_int(env, "episode_length", episode_length, minimum=1)
        self.seed = None if seed is None else check_int(env, "seed", seed)
        fix = "give the magnitude (>= 0); the sign is applied by the env"
        self.wall_hit_penalty = check_float(env, "wall_hit_penalty", wall_hit_penalty, at_least=0.0, fix=fix)
        self.tag_reward_for_tagger = check_float(
            env, "tag_reward_for_tagger", tag_reward_for_tagger, at_least=0.0, fix=fix
        )
        self.tag_penalty_for_runner = check_float(
            env, "tag_penalty_for_runner", tag_penalty_for_runner, at_least=0.0, fix=fix
        )
        self.step_cost_for_tagger = check_float(
            env, "step_cost_for_tagger", step_cost_for_tagger, at_least=0.0, fix=fix
        )
        self.use_full_observation = check_bool(env, "use_full_observation", use_full_observation)
        self.env_backend = check_backend(env, env_backend)
        self.starting_location_x = self._check_start("starting_location_x", starting_location_x)
        self.starting_location_y = self._check_start("starting_location_y", starting_location_y)
        self.rng = np.random.default_rng(self.seed)
        self.fresh_start_states = check_bool(env, "fresh_start_states", fresh_start_states)
        if self.fresh_start_states and (self.starting_location_x is not None or self.starting_location_y is not None):
            raise ConfigError(
                f"{env}: fresh_start_states=True draws every start layout; drop starting_location_x/y, or set "
                f"fresh_start_states=False to start every episode from them"
            )

        n = self.num_agents
        self.runner_id = n - 1
        self.agent_types = np.full(n, C.TAGGER, np.int32)
        self.agent_types[self.runner_id] = C.RUNNER
        self.taggers = {i: True for i in range(n - 1)}
        self.runners = {self.runner_id: True}
        #: (NUM_ACTIONS, 2) action index -> (dx, dy), as 2.7.1 exposed it (its scripts copy it into
        #: the kernel's __constant__ kIndexToActionArr, which already holds these values here).
        self.step_actions = np.asarray(C.ACTIONS, np.int32)
        self.obs_dim = C.obs_dim(n, self.use_full_observation)
        obs_box = spaces.Box(0.0, 1.0, shape=(self.obs_dim,), dtype=np.float32)
        self.observation_space = {i: obs_box for i in range(n)}
        self.action_space = {i: spaces.Discrete(C.NUM_ACTIONS) for i in range(n)}
        self.timestep = 0
        self._start: tuple[np.ndarray, np.ndarray] | None = None
        self._positions: tuple[np.ndarray, np.ndarray] | None = None  # of the unwrapped env (step)

    def reseed(self, seed: int) -> None:
        """Re-seed the env's RNG, as if the env had been built with ``seed`` (it draws the reset
        pools of :class:`TagGridWorldWithResetPool`; the start layout itself is fixed).

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        self.seed = check_int(type(self).__name__, "seed", seed, minimum=0)
        self.rng = np.random.default_rng(self.seed)

    def reseed_start_states(self, seed: int) -> None:
        """Nothing to re-seed: ``reset()`` always returns the same layout (given or default)."""

    def _check_start(self, key: str, value: Any) -> npt.NDArray[np.int32] | None:
        if value is None:
            return None
        arr = np.asarray(value)
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.array_equal(arr, np.round(arr)):
            arr = arr.astype(np.int64)  # whole numbers given as floats (2.7.1 built them with np.ones)
        if arr.shape != (self.num_agents,) or arr.dtype.kind not in "iu":
            raise ConfigError(
                f"{type(self).__name__}: {key} must be {self.num_agents} integers (one per agent) or "
                f"None; got shape {arr.shape} and dtype {arr.dtype}"
            )
        if arr.min() < 0 or arr.max() > self.grid_length:
            raise ConfigError(
                f"{type(self).__name__}: {key} has values in [{arr.min()}, {arr.max()}]; they must "
                f"lie in [0, grid_length={self.grid_length}]"
            )
        return arr.astype(np.int32)

    @property
    def is_tagger(self) -> npt.NDArray[np.bool_]:
        """(N,) True for taggers."""
        return self.agent_types == C.TAGGER

    def agent_groups(self) -> dict[str, list[int]]:
        """``{"tagger": [...], "runner": [N - 1]}``: a policy map naming the roles maps them here."""
        return {"tagger": sorted(self.taggers), "runner": sorted(self.runners)}

    def render_rollout(self, states: Mapping[str, Any], **kwargs: Any) -> Any:
        """Animation of recorded ``loc_x``, ``loc_y`` (frames, N) on the grid (see
        :func:`example_envs.tag_continuous.rendering.tag_rollout_animation` for ``kwargs``)."""
        from example_envs.tag_continuous.rendering import tag_rollout_animation

        kwargs.setdefault("title", "Tag (grid world)")
        return tag_rollout_animation(states["loc_x"], states["loc_y"], self.is_tagger, None,
                                     grid_length=float(self.grid_length), gridworld=True, **kwargs)

    # ------------------------------------------------------------------ host reset and data
    def default_start(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """Start cells: the given ones, else taggers at (L // 2, L // 2) and the runner at (0, 0)."""
        n, mid = self.num_agents, self.grid_length // 2
        x = np.full(n, mid, np.int32)
        y = np.full(n, mid, np.int32)
        x[self.runner_id] = y[self.runner_id] = 0
        if self.starting_location_x is not None:
            x = self.starting_location_x.copy()
        if self.starting_location_y is not None:
            y = self.starting_location_y.copy()
        return x, y

    def reset(self) -> dict[int, npt.NDArray[np.float32]]:
        """One env's start state on the host; returns ``{agent_id: obs}`` at t = 0."""
        x, y = self.default_start()
        self._start = (x, y)
        self._positions = (x.copy(), y.copy())
        self.timestep = 0
        obs = compute_observations(
            x[None], y[None], np.zeros(1, np.int32), self.episode_length, self.grid_length,
            self.use_full_observation,
        )[0]
        return {i: obs[i] for i in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        """Positions (reset-copied -> (E, N)), the tag counter (-> (E,)) and the parameters."""
        if self._start is None:
            self.reset()
        feed = DataFeed()
        self._add_positions(feed)
        feed.add_data("num_taggers_on_runner", 0, save_copy_and_apply_at_reset=True)
        for name in REWARD_PARAMS:
            feed.add_data(name, float(getattr(self, name)))
        feed.add_data("world_boundary", int(self.grid_length))
        return feed

    def _add_positions(self, feed: DataFeed) -> None:
        x, y = self._start
        feed.add_data("loc_x", x.copy(), save_copy_and_apply_at_reset=True, log_data_across_episode=True)
        feed.add_data("loc_y", y.copy(), save_copy_and_apply_at_reset=True, log_data_across_episode=True)

    def cuda_constants(self) -> dict[str, Any]:
        """Compile-time constants of ``tag_gridworld_step.cu`` (from ``constants.py``)."""
        return {
            "kNumActions": C.NUM_ACTIONS,
            "kActionDx": C.ACTION_DX,
            "kActionDy": C.ACTION_DY,
            "kUseFullObservation": self.use_full_observation,
            "kNumFullObsFeatures": len(C.FULL_OBS_FEATURES),
            "kObsDim": self.obs_dim,
            "kRunnerType": C.RUNNER,
        }

    def numpy_start_state(self, data: Mapping[str, Any], rows: np.ndarray, key: StartKey) -> None:
        """Start-state hook: agent a of each reset env on cell (x, y), x and y uniform in [0, L]
        from words 0 and 1 of slot a; observations at t = 0. Mirrored by ``TagGridWorldStartState``."""
        length = int(data["world_boundary"])
        words = key.words(np.arange(self.num_agents))  # (R, N, 4)
        x = scale_bits_to_range(words[..., 0], length + 1).astype(np.int32)
        y = scale_bits_to_range(words[..., 1], length + 1).astype(np.int32)
        data["loc_x"][rows] = x
        data["loc_y"][rows] = y
        data[Constants.OBSERVATIONS][rows] = compute_observations(
            x, y, np.zeros(len(rows), np.int32), int(data["episode_length"]), length, self.use_full_observation
        )

    # ------------------------------------------------------------------ one env, no wrapper
    def step(self, actions: Any = None) -> Any:
        """Step the env.

        Wrapped (an EnvWrapper bound a data store): every replica steps in place (see
        :meth:`CUDAEnvironmentContext.step`). Unwrapped, as 2.7.1's TagGridWorld: one env steps on
        the host from the state :meth:`reset` set, given ``{agent_id: action index}`` for every
        agent, and returns ``(obs, rewards, {"__all__": done}, {})`` (obs and rewards keyed by agent
        id). The numbers are those of :meth:`numpy_step`, which runs on a one-env copy of the state.

        Raises:
            UsageError: unwrapped without ``reset()`` first, or ``actions`` is not a mapping.
            SpaceMismatchError: the keys are not the agent ids 0..N-1, or an action is not an
                integer in [0, 5).
        """
        if self.cuda_data_manager is not None:
            return super().step(actions)
        if not isinstance(actions, Mapping):
            raise UsageError(
                f"{type(self).__name__}.step(actions) without an EnvWrapper steps one env: pass "
                f"{{agent_id: action}} for the {self.num_agents} agents (got {type(actions).__name__}), "
                f"or wrap the env in an EnvWrapper to step its replicas in place"
            )
        if self._positions is None:
            raise UsageError(f"{type(self).__name__}.step() before reset(): call reset() first")
        data = self._one_env_state(self._action_indices(actions))
        self.numpy_step(data)
        self._positions = (data["loc_x"][0], data["loc_y"][0])
        self.timestep = int(data[Constants.TIMESTEP][0])
        obs, rew = data[Constants.OBSERVATIONS][0], data[Constants.REWARDS][0]
        agents = range(self.num_agents)
        return {i: obs[i] for i in agents}, {i: float(rew[i]) for i in agents}, \
            {"__all__": bool(data[Constants.DONE][0])}, {}

    def _action_indices(self, actions: Mapping[Any, Any]) -> npt.NDArray[np.int32]:
        """(N,) action indices from ``{agent_id: action}``, checked."""
        env, n = type(self).__name__, self.num_agents
        if set(actions) != set(range(n)):
            raise SpaceMismatchError(f"{env}.step: actions must map each agent id 0..{n - 1} to an action; "
                                     f"got keys {list(actions)[:12]}")
        out = np.empty(n, np.int32)
        for agent, action in actions.items():
            value = np.asarray(action)
            if value.shape != () or value.dtype.kind not in "iu" or not 0 <= int(value) < C.NUM_ACTIONS:
                raise SpaceMismatchError(
                    f"{env}.step: the action of agent {agent} is {action!r}; it must be an integer in "
                    f"[0, {C.NUM_ACTIONS}) (stay, right, left, up, down)"
                )
            out[agent] = int(value)
        return out

    def _one_env_state(self, actions: npt.NDArray[np.int32]) -> dict[str, Any]:
        """The data store :meth:`numpy_step` reads, for one env at the current host state."""
        x, y = self._positions
        n = self.num_agents
        return {
            "loc_x": x[None].copy(), "loc_y": y[None].copy(), "num_taggers_on_runner": np.zeros(1, np.int32),
            **{name: F32(getattr(self, name)) for name in REWARD_PARAMS},
            "world_boundary": np.int32(self.grid_length), "episode_length": np.int32(self.episode_length),
            Constants.ACTIONS: actions[None, :, None], Constants.TIMESTEP: np.array([self.timestep], np.int32),
            Constants.DONE: np.zeros(1, np.int32), Constants.TRUNCATED: np.zeros(1, np.int32),
            Constants.REWARDS: np.zeros((1, n), F32), Constants.OBSERVATIONS: np.zeros((1, n, self.obs_dim), F32),
        }

    # ------------------------------------------------------------------ CPU step
    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """Step every env in place; mirrors the CUDA kernels."""
        x, y = data["loc_x"], data["loc_y"]
        timestep, done = data[Constants.TIMESTEP], data[Constants.DONE]
        episode_length, length = int(data["episode_length"]), int(data["world_boundary"])
        counter = data["num_taggers_on_runner"].reshape(x.shape[0])

        timestep += 1
        actions = np.clip(data[Constants.ACTIONS][..., 0], 0, C.NUM_ACTIONS - 1)
        new_x, new_y = x + _DX[actions], y + _DY[actions]
        x[...] = np.clip(new_x, 0, length)
        y[...] = np.clip(new_y, 0, length)
        hit = (x != new_x) | (y != new_y)

        r = self.num_agents - 1
        counter[...] = ((x[:, :r] == x[:, r:]) & (y[:, :r] == y[:, r:])).sum(axis=1)
        tagged = (counter > 0)[:, None]
        is_runner = self.agent_types == C.RUNNER
        tag_reward, step_cost = F32(data["tag_reward_for_tagger"]), F32(data["step_cost_for_tagger"])
        base = np.where(
            tagged,
            np.where(is_runner, -F32(data["tag_penalty_for_runner"]), tag_reward),
            np.where(is_runner, step_cost, -step_cost),
        )
        data[Constants.REWARDS][...] = base + np.where(hit, -F32(data["wall_hit_penalty"]), F32(0))
        data[Constants.OBSERVATIONS][...] = compute_observations(
            x, y, timestep, episode_length, length, self.use_full_observation
        )
        time_up = timestep >= episode_length
        done[tagged[:, 0] | time_up] = 1
        data[Constants.TRUNCATED][...] = time_up & ~tagged[:, 0]  # the CUDA twin: GridEndStep


class TagGridWorldWithResetPool(TagGridWorld):
    """TagGridWorld whose replicas restart from random layouts.

    ``reset_pool_size`` layouts are drawn once (seeded): taggers uniform over 1..L-1 on each axis,
    the runner at (0, 0). At every reset the core reset kernel draws one pool row per env; loc_x and
    loc_y pools have the same size, so one draw picks the x and y of the same layout.

    Note: right after a pool reset the ``observations`` placeholder holds the saved observation of
    the host reset, not of the drawn layout; observations are correct from the next step on.
    """

    _accepted = (*C.DEFAULTS, *C.POOL_DEFAULTS)
    array_schema = {
        **TagGridWorld.array_schema,
        "loc_x_reset_pool": ArraySpec(("reset_pool_size", "num_agents"), "int32"),
        "loc_y_reset_pool": ArraySpec(("reset_pool_size", "num_agents"), "int32"),
    }

    def __init__(self, *, reset_pool_size: int = 5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        env = type(self).__name__
        self.reset_pool_size = check_int(env, "reset_pool_size", reset_pool_size, minimum=2)
        if self.grid_length < 2:
            raise ConfigError(f"{env}: grid_length={self.grid_length} leaves no cell in 1..L-1; use grid_length >= 2")
        self._draw_pools()

    def _draw_pools(self) -> None:
        shape = (self.reset_pool_size, self.num_agents)
        self.pool_x = self.rng.integers(1, self.grid_length, shape, dtype=np.int32)
        self.pool_y = self.rng.integers(1, self.grid_length, shape, dtype=np.int32)
        self.pool_x[:, self.runner_id] = 0
        self.pool_y[:, self.runner_id] = 0

    def reseed(self, seed: int) -> None:
        """Re-seed the RNG and redraw the pools: the pools ``TagGridWorldWithResetPool(seed=seed)``
        draws. Data already on a device is not touched: the interop adapters push the new pools
        (``reset(seed=...)``).

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        super().reseed(seed)
        self._draw_pools()

    def _add_positions(self, feed: DataFeed) -> None:
        # Pool targets: no saved copy; the wrapper gives them the env axis.
        x, y = self._start
        feed.add_data("loc_x", x.copy(), log_data_across_episode=True)
        feed.add_data("loc_y", y.copy(), log_data_across_episode=True)

    def get_reset_pool_dictionary(self) -> DataFeed:
        """Pools (P, N) for loc_x and loc_y."""
        feed = DataFeed()
        feed.add_pool_for_reset("loc_x_reset_pool", self.pool_x.copy(), reset_target="loc_x")
        feed.add_pool_for_reset("loc_y_reset_pool", self.pool_y.copy(), reset_target="loc_y")
        return feed


class CUDATagGridWorld(TagGridWorld):
    """2.7.1's name of the GPU TagGridWorld. Here every env class is dual mode, so this is
    :class:`TagGridWorld` itself (same ``name``, kernels and constructor)."""


class CUDATagGridWorldWithResetPool(TagGridWorldWithResetPool):
    """2.7.1's name of the GPU TagGridWorld with a reset pool (:class:`TagGridWorldWithResetPool`;
    2.7.1 drew 5 start layouts, the default ``reset_pool_size``)."""


# ============================================================================ NumPy reference
def compute_observations(
    x: np.ndarray, y: np.ndarray, timestep: np.ndarray, episode_length: int, grid_length: int,
    use_full_observation: bool,
) -> npt.NDArray[np.float32]:
    """(E, N, obs_dim) observations (README.md). CUDA twins: ``GridFullObservationValue`` and
    ``GridWritePartialObservation``."""
    num_envs, n = x.shape
    length = F32(grid_length)
    px, py = x.astype(F32) / length, y.astype(F32) / length
    time_frac = timestep.astype(F32) / F32(episode_length)  # (E,)
    types = np.zeros(n, F32)
    types[n - 1] = 1.0
    if use_full_observation:
        shared = np.concatenate([px, py, np.broadcast_to(types, (num_envs, n))], axis=1)  # (E, 3N)
        obs = np.empty((num_envs, n, len(C.FULL_OBS_FEATURES) * n + 1), F32)
        obs[:, :, : 3 * n] = shared[:, None, :]
        obs[:, :, 3 * n : 4 * n] = np.eye(n, dtype=F32)
        obs[:, :, -1] = time_frac[:, None]
        return obs
    r = n - 1
    # runner's target: the nearest tagger (int squared distance, first minimum = lowest id)
    d2 = (x[:, :r] - x[:, r:]) ** 2 + (y[:, :r] - y[:, r:]) ** 2
    nearest = np.argmin(d2, axis=1)  # (E,)
    target = np.broadcast_to(np.full(n, r), (num_envs, n)).copy()
    target[:, r] = nearest
    env = np.arange(num_envs)[:, None]
    obs = np.stack(
        [px, py, px[env, target], py[env, target], np.broadcast_to(types, (num_envs, n)),
         np.broadcast_to(time_frac[:, None], (num_envs, n))],
        axis=2,
    )
    return obs.astype(F32, copy=False)
