"""LegacyCrowd: a small multi-agent game written as a WarpDrive 2.7.1 user writes an env.

Written against 2.7.1's API only: a gym-style CPU class (``reset()``, ``step(actions) -> (obs,
rew, done, info)``, ``gym.spaces``), and a CUDA child class with ``get_data_dictionary()``,
``get_tensor_dictionary()`` and a ``step()`` that launches ``self.cuda_step`` with arguments from
``self.cuda_step_function_feed``. Its ``.cu`` file is registered with
``EnvironmentRegistrar.add_cuda_env_src_path`` (there is no ``cuda_source`` attribute, no
``step_kernel_args`` and no ``numpy_step``).

The game: N agents on an L x L grid. Each step every agent moves (stay, +x, -x, +y, -y; clipped),
then gets ``goal_reward`` if it stands on the centre cell (L // 2, L // 2) minus ``crowd_penalty``
for every other agent on its cell. Observation (6 values): own x / L, own y / L, the crowd's mean
x / L and mean y / L, (agents sharing my cell) / N, t / T. Done at t = T. Agents start from a
layout drawn once from ``seed``, so every reset restores the same state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

try:  # 2.7.1 envs declare their spaces with the retired gym package
    from gym import spaces
except ImportError:  # pragma: no cover - gym is optional
    from tests.helpers.legacy_env import gym_standin as spaces

from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext

_OBSERVATIONS = Constants.OBSERVATIONS
_ACTIONS = Constants.ACTIONS
_REWARDS = Constants.REWARDS

CUDA_SOURCE = Path(__file__).with_name("legacy_crowd_step.cu")
OBS_DIM = 6
_MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.int32)


def crowd_step(loc_x, loc_y, actions, timestep, grid_length, crowd_penalty, goal_reward, episode_length):
    """One step of E envs in place: loc_x, loc_y (E, N) int32, actions (E, N) int, timestep (E,)
    int32. Returns observations (E, N, 6) float32, rewards (E, N) float32 and done (E,) bool."""
    f32 = np.float32
    moves = _MOVES[np.asarray(actions, np.int64)]
    loc_x[...] = np.clip(loc_x + moves[..., 0], 0, grid_length - 1)
    loc_y[...] = np.clip(loc_y + moves[..., 1], 0, grid_length - 1)
    timestep += 1
    num_agents = loc_x.shape[1]
    same = (loc_x[:, :, None] == loc_x[:, None, :]) & (loc_y[:, :, None] == loc_y[:, None, :])
    crowd = same.sum(axis=2) - 1
    goal = grid_length // 2
    at_goal = np.where((loc_x == goal) & (loc_y == goal), f32(goal_reward), f32(0.0))
    rewards = (at_goal - f32(crowd_penalty) * crowd.astype(f32)).astype(f32)
    length, spread = f32(grid_length), f32(num_agents * grid_length)
    obs = np.empty((*loc_x.shape, OBS_DIM), f32)
    obs[..., 0] = loc_x.astype(f32) / length
    obs[..., 1] = loc_y.astype(f32) / length
    obs[..., 2] = (loc_x.sum(axis=1).astype(f32) / spread)[:, None]
    obs[..., 3] = (loc_y.sum(axis=1).astype(f32) / spread)[:, None]
    obs[..., 4] = crowd.astype(f32) / f32(num_agents)
    obs[..., 5] = (timestep.astype(f32) / f32(episode_length))[:, None]
    return obs, rewards, timestep >= episode_length


class LegacyCrowd:
    """The CPU env, gym style (a plain class, as 2.7.1's TagGridWorld is)."""

    name = "LegacyCrowd"

    def __init__(self, num_agents=5, grid_length=4, episode_length=10, crowd_penalty=0.5, goal_reward=1.0,
                 seed=None, env_backend="cpu"):
        assert num_agents > 0 and grid_length > 0 and episode_length > 0
        self.num_agents = num_agents
        self.grid_length = grid_length
        self.episode_length = episode_length
        self.crowd_penalty = crowd_penalty
        self.goal_reward = goal_reward
        rng = np.random.default_rng(seed)
        self.starting_location_x = rng.integers(0, grid_length, num_agents).astype(np.int32)
        self.starting_location_y = rng.integers(0, grid_length, num_agents).astype(np.int32)
        self.action_space = {agent_id: spaces.Discrete(len(_MOVES)) for agent_id in range(num_agents)}
        self.observation_space = None  # set by the env wrapper
        self.timestep = None
        self.env_backend = env_backend
        self.loc_x = self.loc_y = None

    def reset(self):
        self.timestep = 0
        self.loc_x = self.starting_location_x.copy()
        self.loc_y = self.starting_location_y.copy()
        x, y = self.loc_x[None].copy(), self.loc_y[None].copy()
        stay = np.zeros((1, self.num_agents), np.int32)
        obs, _, _ = crowd_step(x, y, stay, np.full(1, -1, np.int32), self.grid_length, self.crowd_penalty,
                               self.goal_reward, self.episode_length)
        return {agent_id: obs[0, agent_id] for agent_id in range(self.num_agents)}

    def step(self, actions=None):
        assert actions is not None, "the CPU env needs actions"
        self.timestep += 1
        acts = np.array([[int(actions[agent_id]) for agent_id in range(self.num_agents)]])
        x, y = self.loc_x[None], self.loc_y[None]
        obs, rew, done = crowd_step(x, y, acts, np.full(1, self.timestep - 1, np.int32), self.grid_length,
                                    self.crowd_penalty, self.goal_reward, self.episode_length)
        self.loc_x, self.loc_y = x[0], y[0]
        obs = {agent_id: obs[0, agent_id] for agent_id in range(self.num_agents)}
        rew = {agent_id: rew[0, agent_id] for agent_id in range(self.num_agents)}
        return obs, rew, {"__all__": bool(done[0])}, {}


class CUDALegacyCrowd(LegacyCrowd, CUDAEnvironmentContext):
    """The GPU env (dual mode: on the cpu backend its step is the parent's)."""

    def get_data_dictionary(self):
        data_dict = DataFeed()
        for feature, value in (("loc_x", self.starting_location_x), ("loc_y", self.starting_location_y)):
            data_dict.add_data(name=feature, data=value.copy(), save_copy_and_apply_at_reset=True)
        data_dict.add_data_list(
            [
                ("grid_length", self.grid_length),
                ("crowd_penalty", self.crowd_penalty),
                ("goal_reward", self.goal_reward),
            ]
        )
        return data_dict

    def get_tensor_dictionary(self):
        return DataFeed()

    def step(self, actions=None):
        if self.env_backend != "pycuda":
            return super().step(actions)
        self.timestep += 1
        args = [
            "loc_x",
            "loc_y",
            _ACTIONS,
            _OBSERVATIONS,
            _REWARDS,
            "_done_",
            "_timestep_",
            "grid_length",
            "crowd_penalty",
            "goal_reward",
            ("n_agents", "meta"),
            ("episode_length", "meta"),
        ]
        self.cuda_step(
            *self.cuda_step_function_feed(args),
            block=self.cuda_function_manager.block,
            grid=self.cuda_function_manager.grid,
        )
        return None
