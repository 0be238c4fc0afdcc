"""A user's env package outside the repository, written by a test: docs/adding_an_env.md's file set for
tutorial 4's Gather env (CUDA kernel, NumPy twin step, run config, CPU-sized settings), importable as
``<package>`` once ``root`` is on ``sys.path``.

- ``<package>.<module>:<cls>`` (default ``gather:Gather``): the env class (``run_config.yaml`` and
  ``cpu_sized.yaml`` next to it);
- ``import <package>`` registers it in warp_drive's env registrar as ``<registered>`` (default ``<package>_gather``);
- with ``entry_point=True`` a ``.dist-info`` folder in ``root`` names it in the group ``warp_drive.envs``
  as ``<package>_ep`` (as ``pip install`` of a package that declares that entry point would).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

GATHER_PY = '''
"""Gather (tutorial 4): agents on a line walk to their centroid. One block per env."""
from pathlib import Path

import numpy as np
from gymnasium import spaces

from warp_drive.env import Constants, CUDAEnvironmentContext, DataFeed

OBS_DIM = 3


class {cls}(CUDAEnvironmentContext):
    name = "Gather"
    cuda_source = Path(__file__).with_name("gather_step.cu")
    max_blocks_per_env = 1
    step_kernel_args = ("x", Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS, Constants.DONE,
                        Constants.TIMESTEP, ("episode_length", "meta"))

    def __init__(self, num_agents=8, grid_length=20, episode_length=40, seed=0, env_backend="cpu"):
        self.num_agents, self.grid_length, self.episode_length = num_agents, grid_length, episode_length
        self.env_backend = env_backend
        self.rng = np.random.default_rng(seed)
        box = spaces.Box(0.0, 1.0, shape=(OBS_DIM,), dtype=np.float32)
        self.observation_space = {a: box for a in range(num_agents)}
        self.action_space = {a: spaces.Discrete(3) for a in range(num_agents)}
        self.x0 = np.zeros(num_agents, np.int32)

    def observe(self, x, timestep):
        length = np.float32(self.grid_length)
        centroid = x.sum(axis=1).astype(np.float32) / np.float32(x.shape[1])
        obs = np.empty((*x.shape, OBS_DIM), np.float32)
        obs[..., 0] = x.astype(np.float32) / length
        obs[..., 1] = (centroid / length)[:, None]
        obs[..., 2] = (timestep.astype(np.float32) / np.float32(self.episode_length))[:, None]
        return obs, centroid

    def reset(self):
        self.x0 = self.rng.integers(0, self.grid_length + 1, size=self.num_agents).astype(np.int32)
        obs, _ = self.observe(self.x0[None], np.zeros(1, np.int32))
        return {a: obs[0, a] for a in range(self.num_agents)}

    def get_data_dictionary(self):
        feed = DataFeed()
        feed.add_data("x", self.x0, save_copy_and_apply_at_reset=True)
        return feed

    def cuda_constants(self):
        return {"kGridLength": self.grid_length, "kObsDim": OBS_DIM}

    def numpy_step(self, data):
        x, timestep = data["x"], data[Constants.TIMESTEP]
        np.clip(x + data[Constants.ACTIONS][..., 0] - 1, 0, self.grid_length, out=x)
        timestep += 1
        obs, centroid = self.observe(x, timestep)
        data[Constants.OBSERVATIONS][...] = obs
        data[Constants.REWARDS][...] = -np.abs(x.astype(np.float32) - centroid[:, None]) / np.float32(self.grid_length)
        data[Constants.DONE][(x.min(axis=1) == x.max(axis=1)) | (timestep >= int(data["episode_length"]))] = 1
'''

GATHER_CU = r'''
// Gather: one step of every env (specification: Gather.numpy_step). One block per env.
static_assert(wkBlocksPerEnv == 1, "Gather reduces in shared memory: one block per env");
extern "C" __global__ void CudaGatherStep(int* x_arr, const int* sampled_actions_arr, float* observations_arr,
                                          float* rewards_arr, int* done_arr, int* timestep_arr, int episode_length) {
  __shared__ int sum, lowest, highest;
  const int env = wkEnvId();
  const int agent = wkAgentId();
  const bool is_agent = agent < wkNumberAgents;
  const int row = env * wkNumberAgents + agent;
  if (threadIdx.x == 0) { sum = 0; lowest = kGridLength; highest = 0; }
  __syncthreads();
  int x = 0;
  if (is_agent) {
    x = min(max(x_arr[row] + sampled_actions_arr[row] - 1, 0), kGridLength);
    x_arr[row] = x;
    atomicAdd(&sum, x); atomicMin(&lowest, x); atomicMax(&highest, x);
  }
  __syncthreads();
  const int t = timestep_arr[env] + 1;
  if (is_agent) {
    const float length = static_cast<float>(kGridLength);
    const float centroid = static_cast<float>(sum) / static_cast<float>(wkNumberAgents);
    float* obs = observations_arr + row * kObsDim;
    obs[0] = static_cast<float>(x) / length;
    obs[1] = centroid / length;
    obs[2] = static_cast<float>(t) / static_cast<float>(episode_length);
    rewards_arr[row] = -fabsf(static_cast<float>(x) - centroid) / length;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    timestep_arr[env] = t;
    if (t >= episode_length || lowest == highest) done_arr[env] = 1;
  }
}
'''

RUN_CONFIG = '''
# Gather, sized for a GPU; cpu_sized.yaml holds the settings the cpu backend trains with.
name: {package}.{module}:{cls}
env:
  num_agents: 8
  grid_length: 20
  episode_length: 40
trainer:
  num_envs: 1000
  train_batch_size: 40000
  num_episodes: 100000
policy:
  shared:
    to_train: true
    algorithm: PPO
    lr: 0.003
    gamma: 0.95
    model:
      type: fully_connected
      fc_dims: [32, 32]
saving:
  name: gather
  tag: experiments
'''

CPU_SIZED = '''
summary: "8 agents, 4 envs, 3 iterations"
overrides:
  - "trainer.num_envs=4"
  - "trainer.train_batch_size=160"
  - "trainer.num_episodes=12"
  - "policy.shared.model.fc_dims=[16, 16]"
'''

INIT_PY = '''
"""A user's env package: importing it registers {cls} as '{registered}' in warp_drive's env registrar."""
from pathlib import Path

from warp_drive.env import env_registrar

env_registrar.register("{registered}", "{package}.{module}:{cls}",
                       run_config=Path(__file__).with_name("run_config.yaml"))
'''


def write_env_package(root: Path, package: str = "ring_pkg", entry_point: bool = False, module: str = "gather",
                      cls: str = "Gather", registered: str | None = None) -> Path:
    """Writes ``root/<package>/`` (and with ``entry_point`` its ``.dist-info``); returns the package folder."""
    folder = root / package
    folder.mkdir(parents=True)
    names = {"{package}": package, "{module}": module, "{cls}": cls, "{registered}": registered or f"{package}_gather"}
    files = {"__init__.py": INIT_PY, f"{module}.py": GATHER_PY, "gather_step.cu": GATHER_CU,
             "run_config.yaml": RUN_CONFIG, "cpu_sized.yaml": CPU_SIZED}
    for name, text in files.items():
        text = textwrap.dedent(text).lstrip()
        for key, value in names.items():
            text = text.replace(key, value)
        (folder / name).write_text(text)
    if entry_point:
        info = root / f"{package}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[warp_drive.envs]\n{package}_ep = {package}.{module}:{cls}\n")
    return folder
