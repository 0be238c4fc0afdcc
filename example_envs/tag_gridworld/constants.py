"""Tag (grid world): defaults, the action table and the observation layout in one place.

``TagGridWorld.cuda_constants()`` renders the action table into the kernel prelude as
``__device__ constexpr int kActionDx[5]`` / ``kActionDy[5]``, from the very tuples below.
"""

from __future__ import annotations

from typing import Final

DEFAULTS: Final[dict[str, object]] = {
    "num_taggers": 10,
    "grid_length": 10,
    "episode_length": 100,
    "starting_location_x": None,
    "starting_location_y": None,
    "seed": None,
    "wall_hit_penalty": 0.1,
    "tag_reward_for_tagger": 10.0,
    "tag_penalty_for_runner": 2.0,
    "step_cost_for_tagger": 0.01,
    "use_full_observation": True,
    "env_backend": "cpu",
    "fresh_start_states": False,
}

#: Extra argument of TagGridWorldWithResetPool.
POOL_DEFAULTS: Final[dict[str, object]] = {"reset_pool_size": 5}

#: Agent types: ids 0..N-2 are taggers, id N-1 is the single runner.
TAGGER: Final[int] = 0
RUNNER: Final[int] = 1

#: Action index -> (dx, dy): stay, right, left, up, down.
ACTIONS: Final[tuple[tuple[int, int], ...]] = ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))
NUM_ACTIONS: Final[int] = len(ACTIONS)
ACTION_DX: Final[tuple[int, ...]] = tuple(a[0] for a in ACTIONS)
ACTION_DY: Final[tuple[int, ...]] = tuple(a[1] for a in ACTIONS)

#: Full observation: 4 rows of N values, then the time. obs[f * N + j].
FULL_OBS_FEATURES: Final[tuple[str, ...]] = ("x", "y", "agent_type", "is_self")
#: Partial observation (6 values).
PARTIAL_OBS_FEATURES: Final[tuple[str, ...]] = ("own_x", "own_y", "target_x", "target_y", "own_type", "time")
PARTIAL_OBS_DIM: Final[int] = len(PARTIAL_OBS_FEATURES)

#: Largest grid_length whose squared distances (2 L^2) fit in int32.
MAX_GRID_LENGTH: Final[int] = 32767


def obs_dim(num_agents: int, use_full_observation: bool) -> int:
    """4 N + 1 (full) or 6 (partial)."""
    return len(FULL_OBS_FEATURES) * num_agents + 1 if use_full_observation else PARTIAL_OBS_DIM
