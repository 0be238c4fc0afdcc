"""Tag (continuous): taggers chase runners on a square of side ``grid_length``.

Dual mode: the same class steps on the GPU (``tag_continuous_step.cu``) and on the CPU
(:meth:`TagContinuous.numpy_step`, vectorised over envs and agents). The NumPy twin of the kernels,
their specification, is :mod:`example_envs.tag_continuous.numpy_twin` (one step, the start-state
draw, the observations, the neighbour search and the tags); its functions are importable from here
too, under the names the kernel's comments use (``tag_continuous.move_agents``, ...). This module
holds the env class: its arguments and checks, roles and seeding, the host ``reset()``, the data
it pushes, the kernels' arguments and compile-time constants. See ``README.md`` for the
observation layout, the reward table and the tolerances.
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
    check_choice,
    check_float,
    check_int,
    reject_unknown_kwargs,
)
from example_envs.tag_continuous import constants as C
from example_envs.tag_continuous import numpy_twin
from example_envs.tag_continuous.numpy_twin import compute_observations, find_tags, move_agents, nearest_agents
from warp_drive.env import ArraySpec, Constants, CUDAEnvironmentContext, DataFeed
from warp_drive.vocab.start_state import StartKey
from warp_drive.errors import ConfigError

__all__ = [
    "LOGGED",
    "PHASE_KERNELS",
    "SCALAR_PARAMS",
    "STATE_FLOAT",
    "STATE_INT",
    "TagContinuous",
    "compute_observations",
    "find_tags",
    "move_agents",
    "nearest_agents",
]

F32 = np.float32
#: Range of ``grid_length``: a float32 arena whose positions, speeds and distances stay meaningful.
MIN_GRID_LENGTH, MAX_GRID_LENGTH = 1e-2, 1e6


#: Per-agent state arrays (reset-copied, so (E, N) on the data store).
STATE_FLOAT = ("loc_x", "loc_y", "speed", "direction", "acceleration", "edge_hit_reward_penalty")
STATE_INT = ("still_in_the_game", "tag_counts")
LOGGED = ("loc_x", "loc_y", "still_in_the_game")
#: Float parameters passed to the kernels by value.
SCALAR_PARAMS = (
    "grid_length", "max_speed", "edge_hit_penalty", "distance_margin_for_reward",
    "tag_reward_for_tagger", "tag_penalty_for_runner", "end_of_game_reward_for_runner",
)

#: Phase kernels (several blocks per env), in launch order, each with only the arguments it uses.
PHASE_KERNELS: dict[str, tuple[Any, ...]] = {
    "CudaTagContinuousMove": (
        "loc_x", "loc_y", "speed", "direction", "acceleration", "still_in_the_game", "edge_hit_reward_penalty",
        "tag_counts", "skill_levels", "step_rewards", "acceleration_actions", "turn_actions", Constants.ACTIONS,
        Constants.REWARDS, Constants.TIMESTEP, "grid_length", "max_speed", "edge_hit_penalty",
    ),
    "CudaTagContinuousObserveAndTag": (
        "loc_x", "loc_y", "speed", "direction", "acceleration", "still_in_the_game", "tag_counts", "num_runners",
        "agent_types", "tagger_ids", Constants.OBSERVATIONS, Constants.REWARDS, Constants.TIMESTEP, "grid_length",
        "max_speed", "distance_margin_for_reward", "tag_penalty_for_runner", ("episode_length", "meta"),
    ),
    "CudaTagContinuousFinish": (
        "still_in_the_game", "tag_counts", "num_runners", "agent_types", Constants.REWARDS, Constants.DONE,
        Constants.TRUNCATED, Constants.TIMESTEP, "tag_reward_for_tagger", "end_of_game_reward_for_runner",
        ("episode_length", "meta"),
    ),
}


def _action_table(low: float, high: float, levels: int) -> npt.NDArray[np.float32]:
    """[0, linspace(low, high, levels)] as float32: index 0 is the no-op."""
    return np.concatenate([[0.0], np.linspace(low, high, levels)]).astype(F32)


class TagContinuous(CUDAEnvironmentContext):
    """Multi-agent Tag on a continuous square. Constructor defaults: ``constants.DEFAULTS``.

    Pass the arguments by keyword.

    Args:
        num_taggers, num_runners: agent counts (>= 1 each); N = num_taggers + num_runners.
        grid_length: side L of the square (0.01 <= L <= 1e6).
        episode_length: steps per episode T (>= 1).
        starting_location_x, starting_location_y: (N,) start positions in [0, L], or None
            (uniform, drawn at each host ``reset()``).
        starting_directions: (N,) start directions in radians, or None (random multiple of pi/2).
        seed: seed of the env's own ``np.random.default_rng`` (tagger ids, start states); also the
            seed of the device's start-state draws.
        fresh_start_states: True -> every reset draws new positions (uniform in [0, L)) and
            headings (a random multiple of pi/2) for each env replica and episode, on the device
            (:meth:`numpy_start_state` and its CUDA twin ``TagContinuousStartState``); given
            starting locations or directions stay fixed. False -> every reset restores the one
            start state of the host ``reset()`` (2.7.1's semantics). Roles never change.
        max_speed, skill_level_runner, skill_level_tagger: an agent's top speed is
            max_speed * its skill level (all > 0).
        min_acceleration, max_acceleration, num_acceleration_levels: acceleration table
            [0, linspace(min, max, levels)]; index 0 is a no-op. Same for the turn table.
        edge_hit_penalty, step_penalty_for_tagger, tag_penalty_for_runner: rewards (<= 0), see
            README.md.
        tag_reward_for_tagger, step_reward_for_runner, end_of_game_reward_for_runner: rewards
            (>= 0), see README.md.
        use_full_observation: observe every other agent (7 (N-1) + 1 values) or only the K
            nearest agents still in the game (7 K + 1 values).
        num_other_agents_observed: K, 1 <= K <= N - 1 (used with partial observation).
        tagging_distance: tag radius as a fraction of L, in [0, 1] (0: nobody is ever tagged).
        runner_exits_game_after_tagged: a tagged runner leaves the game.
        neighbour_search: how the CUDA kernel finds the K nearest agents and the nearest tagger:
            "grid" (agents sorted into square cells each step, exact), "scan" (every pair) or
            "auto" (grid for partial observation with >= 256 agents). Results are identical;
            only speed differs. The NumPy step always compares every pair.
        env_backend: "cpu" or "pycuda" (overwritten by the EnvWrapper).

    The parameters up to ``env_backend`` are 2.7.1's, in its order; ``taggers`` and ``runners``
    are dicts ``{agent_id: True}`` as in 2.7.1 (``list(env.taggers)`` gives the tagger ids).

    Raises:
        ConfigError: an argument is unknown, has the wrong type or is out of range.
    """

    name = "TagContinuous"
    cuda_source = Path(__file__).with_name("tag_continuous_step.cu")
    numba_source = "example_envs.tag_continuous.tag_continuous_step_numba"
    numba_block_per_env = True  # the Numba step: one block per env, threads striding over the agents
    phase_kernels = PHASE_KERNELS  # used when an env spans several blocks
    writes_truncation = True  # _truncated_: the time limit ended the episode with runners left
    numpy_step_is_env_separable = True  # numpy_step can step any block of envs alone (cpu rollout in env parts)
    active_agent_flag = "still_in_the_game"  # a tagged runner leaves the episode alone
    render_state_names = ("loc_x", "loc_y", "still_in_the_game")
    array_schema = {
        **{name: ArraySpec(("num_agents",)) for name in STATE_FLOAT},
        **{name: ArraySpec(("num_agents",), "int32") for name in STATE_INT},
        "num_runners": ArraySpec((), "int32"),
        "agent_types": ArraySpec(("num_agents",), "int32"),
        "tagger_ids": ArraySpec(("num_taggers",), "int32"),
        "skill_levels": ArraySpec(("num_agents",)),
        "step_rewards": ArraySpec(("num_agents",)),
        "acceleration_actions": ArraySpec(("num_acceleration_actions",)),
        "turn_actions": ArraySpec(("num_turn_actions",)),
        **{name: ArraySpec(()) for name in SCALAR_PARAMS},
    }
    step_kernel_args = (
        "loc_x", "loc_y", "speed", "direction", "acceleration", "still_in_the_game", "edge_hit_reward_penalty",
        "tag_counts", "num_runners", "agent_types", "tagger_ids", "skill_levels", "step_rewards",
        "acceleration_actions", "turn_actions", Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS,
        Constants.DONE, Constants.TRUNCATED, Constants.TIMESTEP, "grid_length", "max_speed", "edge_hit_penalty",
        "distance_margin_for_reward", "tag_reward_for_tagger", "tag_penalty_for_runner",
        "end_of_game_reward_for_runner", ("episode_length", "meta"),
    )
    #: Arguments of the start-state hook ``TagContinuousStartState``.
    start_state_args = (
        "loc_x", "loc_y", "speed", "direction", "acceleration", "still_in_the_game", "agent_types",
        Constants.OBSERVATIONS, "grid_length", "max_speed",
    )

    def __init__(
        self,
        num_taggers: int = 1,
        num_runners: int = 10,
        grid_length: float = 10.0,
        episode_length: int = 100,
        starting_location_x: Any = None,
        starting_location_y: Any = None,
        starting_directions: Any = None,
        seed: int | None = None,
        max_speed: float = 1.0,
        skill_level_runner: float = 1.0,
        skill_level_tagger: float = 1.0,
        max_acceleration: float = 1.0,
        min_acceleration: float = -1.0,
        max_turn: float = float(C.DEFAULTS["max_turn"]),
        min_turn: float = float(C.DEFAULTS["min_turn"]),
        num_acceleration_levels: int = 10,
        num_turn_levels: int = 10,
        edge_hit_penalty: float = -0.0,
        use_full_observation: bool = True,
        num_other_agents_observed: int = 2,
        tagging_distance: float = 0.01,
        tag_reward_for_tagger: float = 1.0,
        step_penalty_for_tagger: float = -0.0,
        tag_penalty_for_runner: float = -1.0,
        step_reward_for_runner: float = 0.0,
        end_of_game_reward_for_runner: float = 1.0,
        runner_exits_game_after_tagged: bool = True,
        env_backend: str = "cpu",
        neighbour_search: str = "auto",
        fresh_start_states: bool = False,
        **unknown: Any,
    ) -> None:
        env = self.name
        reject_unknown_kwargs(env, unknown, C.DEFAULTS)
        self.num_taggers = check_int(env, "num_taggers", num_taggers, minimum=1)
        self.num_runners = check_int(env, "num_runners", num_runners, minimum=1)
        self.num_agents = self.num_taggers + self.num_runners
        self.grid_length = check_float(env, "grid_length", grid_length, at_least=MIN_GRID_LENGTH, at_most=MAX_GRID_LENGTH,
                                       fix="the side of the square, e.g. 10 (positions are float32)")
        self.episode_length = check_int(env, "episode_length", episode_length, minimum=1)
        self.seed = None if seed is None else check_int(env, "seed", seed)
        self.max_speed = check_float(env, "max_speed", max_speed, above=0.0)
        self.skill_level_runner = check_float(env, "skill_level_runner", skill_level_runner, above=0.0)
        self.skill_level_tagger = check_float(env, "skill_level_tagger", skill_level_tagger, above=0.0)
        self.min_acceleration = check_float(env, "min_acceleration", min_acceleration)
        self.max_acceleration = check_float(
            env, "max_acceleration", max_acceleration, at_least=self.min_acceleration,
            fix="max_acceleration must not be below min_acceleration",
        )
        self.min_turn = check_float(env, "min_turn", min_turn)
        self.max_turn = check_float(
            env, "max_turn", max_turn, at_least=self.min_turn, fix="max_turn must not be below min_turn"
        )
        self.num_acceleration_levels = check_int(env, "num_acceleration_levels", num_acceleration_levels, minimum=1)
        self.num_turn_levels = check_int(env, "num_turn_levels", num_turn_levels, minimum=1)
        self.use_full_observation = check_bool(env, "use_full_observation", use_full_observation)
        self.num_other_agents_observed = check_int(
            env, "num_other_agents_observed", num_other_agents_observed, minimum=1
        )
        if not self.use_full_observation and self.num_other_agents_observed > self.num_agents - 1:
            raise ConfigError(
                f"{env}: num_other_agents_observed={self.num_other_agents_observed} exceeds the "
                f"{self.num_agents - 1} other agents (N={self.num_agents}); set it to at most N - 1"
            )
        self.tagging_distance = check_float(
            env, "tagging_distance", tagging_distance, at_least=0.0, at_most=1.0,
            fix="it is a fraction of grid_length, e.g. 0.01 (0 disables tagging)",
        )
        sign = "use a value <= 0 (it is added to the reward)"
        self.edge_hit_penalty = check_float(env, "edge_hit_penalty", edge_hit_penalty, at_most=0.0, fix=sign)
        self.step_penalty_for_tagger = check_float(
            env, "step_penalty_for_tagger", step_penalty_for_tagger, at_most=0.0, fix=sign
        )
        self.tag_penalty_for_runner = check_float(
            env, "tag_penalty_for_runner", tag_penalty_for_runner, at_most=0.0, fix=sign
        )
        sign = "use a value >= 0"
        self.tag_reward_for_tagger = check_float(
            env, "tag_reward_for_tagger", tag_reward_for_tagger, at_least=0.0, fix=sign
        )
        self.step_reward_for_runner = check_float(
            env, "step_reward_for_runner", step_reward_for_runner, at_least=0.0, fix=sign
        )
        self.end_of_game_reward_for_runner = check_float(
            env, "end_of_game_reward_for_runner", end_of_game_reward_for_runner, at_least=0.0, fix=sign
        )
        self.runner_exits_game_after_tagged = check_bool(
            env, "runner_exits_game_after_tagged", runner_exits_game_after_tagged
        )
        self.neighbour_search = check_choice(env, "neighbour_search", neighbour_search, C.NEIGHBOUR_SEARCH_MODES)
        self.env_backend = check_backend(env, env_backend)
        self.starting_location_x = self._check_start("starting_location_x", starting_location_x, bounded=True)
        self.starting_location_y = self._check_start("starting_location_y", starting_location_y, bounded=True)
        self.starting_directions = self._check_start("starting_directions", starting_directions, bounded=False)
        self.fresh_start_states = check_bool(env, "fresh_start_states", fresh_start_states)

        self.rng = np.random.default_rng(self.seed)
        n = self.num_agents
        self._assign_roles(self._draw_tagger_ids(self.rng))
        self.acceleration_actions = _action_table(
            self.min_acceleration, self.max_acceleration, self.num_acceleration_levels
        )
        self.turn_actions = _action_table(self.min_turn, self.max_turn, self.num_turn_levels)
        self.distance_margin_for_reward = float(F32(self.tagging_distance * self.grid_length))
        self.num_observed = C.observed_agents(n, self.use_full_observation, self.num_other_agents_observed)
        self.obs_dim = C.obs_dim(n, self.use_full_observation, self.num_other_agents_observed)

        obs_box = spaces.Box(-np.inf, np.inf, shape=(self.obs_dim,), dtype=np.float32)
        act = spaces.MultiDiscrete([len(self.acceleration_actions), len(self.turn_actions)])
        self.observation_space = {i: obs_box for i in range(n)}
        self.action_space = {i: act for i in range(n)}
        self.timestep = 0
        self._host_state: dict[str, Any] | None = None

    # ------------------------------------------------------------------ roles and seeding
    def _draw_tagger_ids(self, rng: np.random.Generator) -> npt.NDArray[np.int32]:
        """The tagger ids: the first draw of the env's RNG stream."""
        return np.sort(rng.choice(self.num_agents, self.num_taggers, replace=False)).astype(np.int32)

    def _assign_roles(self, tagger_ids: npt.NDArray[np.int32]) -> None:
        """Set the role arrays (agent_types, tagger_ids, skill_levels, step_rewards) and dicts."""
        n = self.num_agents
        self.tagger_ids = tagger_ids
        self.agent_types = np.full(n, C.RUNNER, np.int32)
        self.agent_types[tagger_ids] = C.TAGGER
        self.taggers = {int(i): True for i in tagger_ids}
        self.runners = {i: True for i in range(n) if i not in self.taggers}
        self.skill_levels = np.where(
            self.is_tagger, F32(self.skill_level_tagger), F32(self.skill_level_runner)
        ).astype(F32)
        self.step_rewards = np.where(
            self.is_tagger, F32(self.step_penalty_for_tagger), F32(self.step_reward_for_runner)
        ).astype(F32)

    def reseed(self, seed: int) -> None:
        """Re-seed everything random, as if the env had been built with ``seed``: the roles (which
        agents are taggers) and the RNG the start states are drawn from.

        ``TagContinuous(seed=s)`` and ``env.reseed(s)`` give the same roles and the same next
        ``reset()``. Data already on a device is not touched: the interop adapters push the new
        role arrays (``reset(seed=...)``).

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        self.seed = check_int(self.name, "seed", seed, minimum=0)
        self.rng = np.random.default_rng(self.seed)
        self._assign_roles(self._draw_tagger_ids(self.rng))

    def reseed_start_states(self, seed: int) -> None:
        """Re-seed only the RNG of the start states, keeping the roles: the next ``reset()`` draws
        the start state ``TagContinuous(seed=seed)`` would draw first.

        Raises:
            ConfigError: ``seed`` is not a non-negative integer.
        """
        rng = np.random.default_rng(check_int(self.name, "seed", seed, minimum=0))
        self._draw_tagger_ids(rng)  # skipped, so the stream is where a fresh env's would be
        self.rng = rng

    # ------------------------------------------------------------------ helpers
    def _check_start(self, key: str, value: Any, bounded: bool) -> npt.NDArray[np.float32] | None:
        if value is None:
            return None
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != (self.num_agents,) or not np.all(np.isfinite(arr)):
            raise ConfigError(
                f"{self.name}: {key} has shape {arr.shape}; pass {self.num_agents} finite values "
                f"(one per agent) or None"
            )
        if bounded and (arr.min() < 0 or arr.max() > self.grid_length):
            raise ConfigError(
                f"{self.name}: {key} has values in [{arr.min()}, {arr.max()}]; they must lie in "
                f"[0, grid_length={self.grid_length}]"
            )
        return arr.astype(F32)

    @property
    def neighbour_grid_side(self) -> int:
        """Cells per side of the CUDA neighbour grid (1: a plain scan); see ``neighbour_search``."""
        return C.neighbour_grid_side(
            self.num_agents, self.use_full_observation, self.num_observed, self.neighbour_search
        )

    @property
    def is_tagger(self) -> npt.NDArray[np.bool_]:
        """(N,) True for taggers."""
        return self.agent_types == C.TAGGER

    @property
    def num_acceleration_actions(self) -> int:
        """Entries of the acceleration table (index 0 is the no-op)."""
        return len(self.acceleration_actions)

    @property
    def num_turn_actions(self) -> int:
        """Entries of the turn table (index 0 is the no-op)."""
        return len(self.turn_actions)

    def agent_groups(self) -> dict[str, list[int]]:
        """``{"tagger": [...], "runner": [...]}``: a policy map naming the roles maps them here."""
        return {"tagger": sorted(self.taggers), "runner": sorted(self.runners)}

    def render_rollout(self, states: Mapping[str, Any], **kwargs: Any) -> Any:
        """Animation of recorded ``loc_x``, ``loc_y``, ``still_in_the_game`` (frames, N) (see
        :func:`example_envs.tag_continuous.rendering.tag_rollout_animation` for ``kwargs``)."""
        from example_envs.tag_continuous.rendering import tag_rollout_animation

        kwargs.setdefault("title", "Continuous Tag")
        return tag_rollout_animation(states["loc_x"], states["loc_y"], self.is_tagger, states.get("still_in_the_game"),
                                     grid_length=float(self.grid_length), gridworld=False, **kwargs)

    # ------------------------------------------------------------------ host reset and data
    def reset(self) -> dict[int, npt.NDArray[np.float32]]:
        """Draw one env's start state on the host; returns ``{agent_id: obs}`` at t = 0."""
        n, length = self.num_agents, self.grid_length
        loc_x = self.starting_location_x if self.starting_location_x is not None else self.rng.uniform(0, length, n)
        loc_y = self.starting_location_y if self.starting_location_y is not None else self.rng.uniform(0, length, n)
        if self.starting_directions is not None:
            direction = self.starting_directions
        else:
            direction = self.rng.choice(np.asarray(C.START_DIRECTIONS), n)
        zeros = np.zeros(n, F32)
        self._host_state = {
            "loc_x": np.asarray(loc_x, F32).copy(),
            "loc_y": np.asarray(loc_y, F32).copy(),
            "speed": zeros.copy(),
            "direction": np.asarray(direction, F32).copy(),
            "acceleration": zeros.copy(),
            "edge_hit_reward_penalty": zeros.copy(),
            "still_in_the_game": np.ones(n, np.int32),
            "tag_counts": np.zeros(n, np.int32),
        }
        self.timestep = 0
        s = {k: v[None] for k, v in self._host_state.items()}
        obs = compute_observations(
            s["loc_x"], s["loc_y"], s["speed"], s["acceleration"], s["direction"], self.agent_types,
            s["still_in_the_game"], np.zeros(1, np.int32), self.episode_length, F32(self.grid_length),
            F32(self.max_speed), self.use_full_observation, self.num_other_agents_observed,
        )[0]
        return {i: obs[i] for i in range(n)}

    def get_data_dictionary(self) -> DataFeed:
        """State (reset-copied, so (E, N) on the store), config tables and scalar parameters."""
        if self._host_state is None:
            self.reset()
        feed = DataFeed()
        for name in (*STATE_FLOAT, *STATE_INT):
            feed.add_data(
                name, self._host_state[name].copy(), save_copy_and_apply_at_reset=True,
                log_data_across_episode=name in LOGGED,
            )
        feed.add_data("num_runners", self.num_runners, save_copy_and_apply_at_reset=True)
        feed.add_data("agent_types", self.agent_types.copy())
        feed.add_data("tagger_ids", self.tagger_ids.copy())
        feed.add_data("skill_levels", self.skill_levels.copy())
        feed.add_data("step_rewards", self.step_rewards.copy())
        feed.add_data("acceleration_actions", self.acceleration_actions.copy())
        feed.add_data("turn_actions", self.turn_actions.copy())
        for name in SCALAR_PARAMS:
            feed.add_data(name, float(getattr(self, name)))
        return feed

    def cuda_constants(self) -> dict[str, Any]:
        """Compile-time constants of ``tag_continuous_step.cu`` (from ``constants.py``)."""
        return {
            "kNumTaggers": self.num_taggers,
            "kNumActionHeads": C.NUM_ACTION_HEADS,
            "kNumAccelerationActions": len(self.acceleration_actions),
            "kNumTurnActions": len(self.turn_actions),
            "kNumObsFeatures": C.NUM_OBS_FEATURES,
            "kNumObservedAgents": self.num_observed,
            "kObsDim": self.obs_dim,
            "kUseFullObservation": self.use_full_observation,
            "kRunnerExitsGameAfterTagged": self.runner_exits_game_after_tagged,
            "kNeighbourGridSide": self.neighbour_grid_side,
            "kGridAgentsPerCell": C.grid_agents_per_cell(self.use_full_observation, self.num_observed),
            "kTaggerType": C.TAGGER,
            "kTwoPi": float(C.TWO_PI),
            "kStartDirections": tuple(float(d) for d in C.START_DIRECTIONS),
            "kDrawStartX": self.starting_location_x is None,
            "kDrawStartY": self.starting_location_y is None,
            "kDrawStartDirection": self.starting_directions is None,
            "kSqrt2": float(C.SQRT2),
            **C.feature_constants(),
        }

    # ------------------------------------------------------------------ NumPy twin (CPU backend)
    def numpy_start_state(self, data: Mapping[str, Any], rows: np.ndarray, key: StartKey) -> None:
        """Start-state hook: new positions and headings of the reset envs ``rows`` where no
        starting value was given (:func:`~example_envs.tag_continuous.numpy_twin.start_state`),
        observations at t = 0. Mirrored by ``TagContinuousStartState``."""
        numpy_twin.start_state(
            data, rows, key, draw_x=self.starting_location_x is None, draw_y=self.starting_location_y is None,
            draw_direction=self.starting_directions is None, episode_length=self.episode_length,
            use_full_observation=self.use_full_observation, num_other_agents_observed=self.num_other_agents_observed,
        )

    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """Step every env in place (:func:`~example_envs.tag_continuous.numpy_twin.step`); mirrors
        the CUDA kernels."""
        numpy_twin.step(
            data, self.use_full_observation, self.num_other_agents_observed, self.runner_exits_game_after_tagged
        )

