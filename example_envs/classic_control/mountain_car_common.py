"""What MountainCar and ContinuousMountainCar share: a (position, velocity) state observed as is,
gymnasium's reset (position uniform in [-0.6, -0.4), velocity 0) and the observation box."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from example_envs.classic_control.base import ClassicControlEnv

#: gymnasium's reset range of the position (both cars).
RESET_LOW, RESET_HIGH = -0.6, -0.4


class MountainCarBase(ClassicControlEnv):
    """Observation space, reset distribution and observation of both mountain cars."""

    def make_observation_space(self) -> spaces.Box:
        p = self.params
        low = np.array([p["min_position"], -p["max_speed"]], dtype=np.float32)
        high = np.array([p["max_position"], p["max_speed"]], dtype=np.float32)
        return spaces.Box(low, high, dtype=np.float32)

    def sample_initial_states(self, rng: np.random.Generator, n: int) -> np.ndarray:
        position = rng.uniform(low=RESET_LOW, high=RESET_HIGH, size=n)
        return np.stack([position, np.zeros(n)], axis=1).astype(np.float32)

    def start_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Position uniform in [-0.6, -0.4), velocity 0."""
        return (RESET_LOW, 0.0), (RESET_HIGH, 0.0)

    def observe(self, state: np.ndarray) -> np.ndarray:
        return np.asarray(state, dtype=np.float32).copy()
