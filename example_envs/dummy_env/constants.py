"""Dummy env: defaults and layout (the single source for Python and the kernel prelude)."""

from __future__ import annotations

from typing import Final

DEFAULTS: Final[dict[str, object]] = {
    "num_agents": 5,
    "episode_length": 20,
    "multiplier": 2.0,
    "target": 100.0,
    "env_backend": "cpu",
}

#: Actions: 0 = hold, 1 = update (``x /= multiplier``, ``y *= multiplier``).
NUM_ACTIONS: Final[int] = 2
UPDATE_ACTION: Final[int] = 1
#: Observation of one agent: (x, y).
OBS_FEATURES: Final[tuple[str, ...]] = ("x", "y")
OBS_DIM: Final[int] = len(OBS_FEATURES)
