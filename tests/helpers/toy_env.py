"""A small dual-mode env used by the framework's own tests (not an example env).

Each agent moves on a line: x += action - 1 (actions 0..2), clipped to [0, L]; reward = -|x - goal|;
done when every agent of an env reached the goal or at the time limit. The CUDA kernel is
multi-block safe (per-env count with atomics; done set by the last agent through atomics).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gymnasium import spaces

from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext

KERNEL = r"""
extern "C" __global__ void CudaToyLineStep(float* x, const int* actions, float* obs, float* rewards,
                                           int* at_goal, int* done, int* timestep, float goal,
                                           int episode_length) {
  (void)done; (void)timestep; (void)episode_length;
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (agent < wkNumberAgents) {
    const int i = env * wkNumberAgents + agent;
    float nx = x[i] + static_cast<float>(actions[i] - 1);
    nx = fminf(fmaxf(nx, 0.0f), kLength);
    x[i] = nx;
    obs[i] = nx / kLength;
    rewards[i] = -fabsf(nx - goal);
    if (nx == goal) atomicAdd(&at_goal[env], 1);  // counted across blocks; read by the next kernel
  }
}

extern "C" __global__ void CudaToyLineFinish(int* at_goal, int* done, int* timestep, int episode_length) {
  const int env = blockIdx.x * blockDim.x + threadIdx.x;
  if (env >= wkNumberEnvs) return;
  const int t = timestep[env] + 1;
  timestep[env] = t;
  if (at_goal[env] == wkNumberAgents || t >= episode_length) done[env] = 1;
  at_goal[env] = 0;
}
"""


class ToyLine(CUDAEnvironmentContext):
    name = "ToyLine"
    step_kernel_args = ("x", Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS, "at_goal",
                        Constants.DONE, Constants.TIMESTEP, "goal", ("episode_length", "meta"))

    def __init__(self, num_agents: int = 5, episode_length: int = 7, length: float = 10.0, goal: float = 3.0,
                 source_dir: str | None = None, env_backend: str = "cpu") -> None:
        self.num_agents = num_agents
        self.episode_length = episode_length
        self.length = float(length)
        self.goal = float(goal)
        self.env_backend = env_backend
        self.observation_space = {a: spaces.Box(0.0, 1.0, (1,), np.float32) for a in range(num_agents)}
        self.action_space = {a: spaces.Discrete(3) for a in range(num_agents)}
        if source_dir is not None:
            path = Path(source_dir) / "toy_line_step.cu"
            path.write_text(KERNEL)
            self.cuda_source = path

    def x0(self) -> np.ndarray:
        return (np.arange(self.num_agents, dtype=np.float32) * 0.5) % self.length

    def reset(self) -> dict:
        return {a: np.array([v / self.length], np.float32) for a, v in enumerate(self.x0())}

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("x", self.x0(), save_copy_and_apply_at_reset=True)
        feed.add_data("at_goal", np.int32(0), save_copy_and_apply_at_reset=True)
        feed.add_data("goal", self.goal)
        return feed

    def cuda_constants(self) -> dict:
        return {"kLength": self.length}

    def cuda_step_kernel(self) -> None:
        self.launch("CudaToyLineStep", self.step_kernel_args)
        self.cuda_function_manager.initialize_functions(["CudaToyLineFinish"])
        E = self.cuda_data_manager.num_envs
        self.launch("CudaToyLineFinish", ["at_goal", Constants.DONE, Constants.TIMESTEP, ("episode_length", "meta")],
                    grid=(-(-E // 128), 1), block=(128, 1, 1))

    @property
    def step_function_name(self) -> str:
        return "CudaToyLineStep"

    def numpy_step(self, data: dict) -> None:
        x = data["x"]
        x[:] = np.clip(x + (data[Constants.ACTIONS][..., 0] - 1).astype(np.float32), 0.0, np.float32(self.length))
        data[Constants.OBSERVATIONS][..., 0] = x / np.float32(self.length)
        data[Constants.REWARDS][:] = -np.abs(x - np.float32(data["goal"]))
        data[Constants.TIMESTEP][:] += 1
        finished = (x == np.float32(data["goal"])).all(axis=1) | (data[Constants.TIMESTEP] >= data["episode_length"])
        data[Constants.DONE][finished] = 1
