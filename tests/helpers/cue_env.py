"""A test-only env that needs memory (cpu backend only): each agent sees a cue at its episode's first step only.

Every episode, each agent draws a cue ``c`` in {0, 1} (the start-state hook: a fresh cue per env, agent and
episode). Its observation is ``[c == 0, c == 1, 1]`` at the episode's first step and ``[0, 0, 0]`` after; its
action (Discrete(2)) earns reward 1 where it equals the cue, at every step. A policy without memory can match
the cue at the first step only and guesses after (expected return ``1 + (L - 1) / 2`` per agent for episodes
of ``L`` steps); one that carries the cue scores ``L``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext

OBS_SIZE = 3


def cue_observations(cue: np.ndarray) -> np.ndarray:
    """The first step's observations ``(..., 3)`` float32 of cues ``cue`` (int)."""
    obs = np.zeros((*cue.shape, OBS_SIZE), np.float32)
    obs[..., 0] = cue == 0
    obs[..., 1] = cue == 1
    obs[..., 2] = 1.0
    return obs


class CueRecall(CUDAEnvironmentContext):
    name = "CueRecall"
    numpy_step_is_env_separable = True
    start_state_args = ("cue", Constants.OBSERVATIONS)

    def __init__(self, num_agents: int = 2, episode_length: int = 4, seed: int = 0, env_backend: str = "cpu") -> None:
        self.num_agents = num_agents
        self.episode_length = episode_length
        self.seed = seed
        self.fresh_start_states = True
        self.env_backend = env_backend
        self.observation_space = {a: spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32) for a in range(num_agents)}
        self.action_space = {a: spaces.Discrete(2) for a in range(num_agents)}

    def reset(self) -> dict:
        obs = cue_observations(np.zeros(self.num_agents, np.int32))
        return {a: obs[a] for a in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("cue", np.zeros(self.num_agents, np.int32), save_copy_and_apply_at_reset=True)
        return feed

    def numpy_start_state(self, data: dict, rows: np.ndarray, key) -> None:
        cue = (key.words(np.arange(self.num_agents))[..., 0] & 1).astype(np.int32)  # (n, N)
        data["cue"][rows] = cue
        data[Constants.OBSERVATIONS][rows] = cue_observations(cue)

    def numpy_step(self, data: dict) -> None:
        data[Constants.REWARDS][:] = (data[Constants.ACTIONS][..., 0] == data["cue"]).astype(np.float32)
        data[Constants.OBSERVATIONS][:] = 0.0
        data[Constants.TIMESTEP][:] += 1
        data[Constants.DONE][data[Constants.TIMESTEP] >= data["episode_length"]] = 1
