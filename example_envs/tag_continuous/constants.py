"""Tag (continuous): defaults, observation layout and CUDA constants in one place.

Everything the NumPy step and the CUDA kernel must agree on lives here: the observation feature
order, the float32 constants (2*pi, sqrt(2)) and the action-head layout. ``TagContinuous``
renders these into the kernel prelude through ``cuda_constants()``.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

# ----------------------------------------------------------------- constructor defaults
DEFAULTS: Final[dict[str, object]] = {
    "num_taggers": 1,
    "num_runners": 10,
    "grid_length": 10.0,
    "episode_length": 100,
    "starting_location_x": None,
    "starting_location_y": None,
    "starting_directions": None,
    "seed": None,
    "max_speed": 1.0,
    "skill_level_runner": 1.0,
    "skill_level_tagger": 1.0,
    "max_acceleration": 1.0,
    "min_acceleration": -1.0,
    "max_turn": math.pi / 2,
    "min_turn": -math.pi / 2,
    "num_acceleration_levels": 10,
    "num_turn_levels": 10,
    "edge_hit_penalty": -0.0,
    "use_full_observation": True,
    "num_other_agents_observed": 2,
    "tagging_distance": 0.01,
    "tag_reward_for_tagger": 1.0,
    "step_penalty_for_tagger": -0.0,
    "tag_penalty_for_runner": -1.0,
    "step_reward_for_runner": 0.0,
    "end_of_game_reward_for_runner": 1.0,
    "runner_exits_game_after_tagged": True,
    "neighbour_search": "auto",
    "env_backend": "cpu",
    "fresh_start_states": False,
}

# ----------------------------------------------------------------- agent types
TAGGER: Final[int] = 1
RUNNER: Final[int] = 0

# ----------------------------------------------------------------- actions
#: Action heads, in the order of ``sampled_actions[..., head]``.
ACTION_HEADS: Final[tuple[str, ...]] = ("acceleration", "turn")
NUM_ACTION_HEADS: Final[int] = len(ACTION_HEADS)

# ----------------------------------------------------------------- observation layout
#: Per observed agent, feature-major: obs[f * M + s] is feature f of observed slot s
#: (M observed agents), followed by one time entry obs[NUM_OBS_FEATURES * M].
OBS_FEATURES: Final[tuple[str, ...]] = (
    "rel_x",  # (x_other - x_self) / (L * sqrt(2))
    "rel_y",  # (y_other - y_self) / (L * sqrt(2))
    "rel_speed",  # (speed_other - speed_self) / max_speed
    "rel_acceleration",  # (acc_other - acc_self) / max_speed
    "rel_direction",  # (dir_other - dir_self) / (2 * pi), not wrapped
    "agent_type",  # 1 tagger, 0 runner
    "still_in_the_game",  # 1 or 0
)
NUM_OBS_FEATURES: Final[int] = len(OBS_FEATURES)

# ----------------------------------------------------------------- float32 constants
#: 2*pi and sqrt(2) rounded once to float32; the kernel gets the very same values.
TWO_PI: Final[np.float32] = np.float32(2.0 * math.pi)
SQRT2: Final[np.float32] = np.float32(math.sqrt(2.0))

#: Starting directions drawn when none are given.
START_DIRECTIONS: Final[tuple[float, ...]] = (0.0, math.pi / 2, math.pi, 3 * math.pi / 2)


def observed_agents(num_agents: int, use_full_observation: bool, num_other_agents_observed: int) -> int:
    """M: agents in one observation (N - 1 with full observation, else K)."""
    return num_agents - 1 if use_full_observation else num_other_agents_observed


def obs_dim(num_agents: int, use_full_observation: bool, num_other_agents_observed: int) -> int:
    """Length of one agent's observation: 7 * M + 1."""
    return NUM_OBS_FEATURES * observed_agents(num_agents, use_full_observation, num_other_agents_observed) + 1


def obs_index(feature: int, slot: int, num_observed: int) -> int:
    """Index of ``feature`` of observed ``slot`` in one observation (mirrors TagObsIndex)."""
    return feature * num_observed + slot


def feature_constants() -> dict[str, int]:
    """``{"kFeatureRelX": 0, ...}``: the feature rows as CUDA constants."""
    names = {
        "rel_x": "kFeatureRelX",
        "rel_y": "kFeatureRelY",
        "rel_speed": "kFeatureRelSpeed",
        "rel_acceleration": "kFeatureRelAcceleration",
        "rel_direction": "kFeatureRelDirection",
        "agent_type": "kFeatureAgentType",
        "still_in_the_game": "kFeatureStillInTheGame",
    }
    return {names[f]: i for i, f in enumerate(OBS_FEATURES)}


# ----------------------------------------------------------------- neighbour grid (CUDA only)
#: ``neighbour_search`` values: "grid" sorts agents into square cells every step and searches the
#: cells near each observer (exact); "scan" compares every pair (a grid of one cell); "auto" picks
#: the grid for partial observation with at least GRID_MIN_AGENTS agents.
NEIGHBOUR_SEARCH_MODES: Final[tuple[str, ...]] = ("auto", "grid", "scan")
GRID_MIN_AGENTS: Final[int] = 256
#: Largest cells-per-side (the cell scan uses one thread per cell: side * side <= num_agents).
GRID_MAX_SIDE: Final[int] = 32


def grid_agents_per_cell(use_full_observation: bool, k: int) -> float:
    """Target agents per cell (``kGridAgentsPerCell``; the kernel sizes its grid each step from it).

    About (K + 1) / 3: the 3 x 3 cells around an observer then hold about 3 K agents, so the first
    square nearly always finds K, and the K-th distance (about one cell) adds few cells. With the
    full observation the grid only serves the tag search: 4 per cell.
    """
    return 4.0 if use_full_observation else max(1.0, (k + 1) / 3.0)


def neighbour_grid_side(num_agents: int, use_full_observation: bool, k: int, mode: str) -> int:
    """Largest side of the CUDA neighbour grid (``kNeighbourGridSide``, for all agents listed);
    1 is a plain scan. The kernel uses a smaller side when fewer agents are in the game."""
    if mode == "scan" or (mode == "auto" and (use_full_observation or num_agents < GRID_MIN_AGENTS)):
        return 1
    side = int(math.sqrt(num_agents / grid_agents_per_cell(use_full_observation, k)))
    return max(1, min(GRID_MAX_SIDE, side))
