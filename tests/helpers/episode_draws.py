"""An env whose step draws one Philox uniform per agent keyed by (row, timestep, episode index): the
pattern of docs/adding_an_env.md, with its NumPy step and its CUDA kernel (``DRAWS_CU``, written by the
GPU tests; ``with_episode=False``: the former counter (row, timestep, 0), NumPy side only)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from warp_drive.env import Constants, CUDAEnvironmentContext, DataFeed
from warp_drive.utils.philox import philox_words, uniform_from_bits

STREAM = 0x64726177  # "draw": the env's own Philox stream


class Draws(CUDAEnvironmentContext):
    """Each agent draws one uniform per step from Philox(key=(seed, STREAM), ctr=(row, timestep, episode))."""

    name = "Draws"
    step_kernel_args = ("draw", Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS, Constants.DONE,
                        Constants.TIMESTEP, Constants.EPISODE, ("episode_length", "meta"))

    def __init__(self, num_agents: int = 3, episode_length: int = 4, seed: int = 7, with_episode: bool = True):
        self.num_agents, self.episode_length, self.seed, self.with_episode = num_agents, episode_length, seed, with_episode
        self.observation_space = {a: spaces.Box(0.0, 1.0, (1,), np.float32) for a in range(num_agents)}
        self.action_space = {a: spaces.Discrete(2) for a in range(num_agents)}

    def reset(self) -> dict:
        return {a: np.zeros(1, np.float32) for a in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("draw", np.zeros(self.num_agents, np.float32), save_copy_and_apply_at_reset=True)
        return feed

    def numpy_step(self, data: dict) -> None:
        timestep, episode = data[Constants.TIMESTEP], data[Constants.EPISODE]
        envs = data["draw"].shape[0]
        rows = np.arange(envs)[:, None] * self.num_agents + np.arange(self.num_agents)
        third = episode[:, None] if self.with_episode else 0
        data["draw"][...] = uniform_from_bits(philox_words(self.seed, STREAM, rows, timestep[:, None], third)[..., 0])
        data[Constants.OBSERVATIONS][..., 0] = data["draw"]
        timestep += 1
        data[Constants.DONE][timestep >= int(data["episode_length"])] = 1

    def cuda_constants(self) -> dict:
        return {"kSeed": self.seed, "kStream": STREAM}


DRAWS_CU = r"""
// Draws: one Philox uniform per agent and step, keyed (row, timestep, episode). Specification: Draws.numpy_step.
extern "C" __global__ void CudaDrawsStep(float* draw_arr, const int* sampled_actions_arr, float* observations_arr,
                                         float* rewards_arr, int* done_arr, int* timestep_arr, const int* episode_arr,
                                         int episode_length) {
  const int env = wkEnvId();
  const int agent = wkAgentId();
  const int t = timestep_arr[env];
  if (agent < wkNumberAgents) {
    const int row = env * wkNumberAgents + agent;
    const float u = wkUniform01(kSeed, kStream, row, t, episode_arr[env]);
    draw_arr[row] = u;
    observations_arr[row] = u;
  }
  __syncthreads();  // every thread has read timestep_arr[env]
  if (threadIdx.x == 0) {
    timestep_arr[env] = t + 1;
    if (t + 1 >= episode_length) done_arr[env] = 1;
  }
}
"""
