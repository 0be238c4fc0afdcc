"""A small dual-mode env with illegal actions and agents that leave the game (tests only; issue 38 item 2).

Each agent walks a corridor of cells ``0 .. goal`` from cell 0. Head 0 (``Discrete(4)``): 0 back (-1), 1 stay,
2 step (+1), 3 jump (+2). **Legal**: back only from cell 1 on, jump only from an even cell. With ``heads=2`` a
second head (``MultiDiscrete([4, 2])``): a signal whose value 1 is legal only on an odd cell (no other effect).
The env's ``action_mask`` array ``(N, 4)`` (``(N, 6)`` with two heads) says so; an illegal action (which only a
policy that ignores the mask takes) costs ``illegal_penalty`` and the agent does not move.

**Leaving the game**: landing on the pit cell kills the agent (``pit_reward``), reaching the goal cell finishes it
(``goal_reward``); either way its ``active`` flag drops to 0 for the rest of the episode: its actions are
ignored, its reward is 0, its observation is zeros and its mask allows only "stay" (and signal 0). Active agents
pay ``step_cost`` each step. An env is done when every agent has left, or at the time limit.

Observation per agent: the one-hot of its cell (goal + 1 values) and its active flag. The best policy jumps
0 -> 2 -> 4 -> 6 (with the default pit 3, goal 6), stepping on from cell 2 falls into the pit.

:data:`KERNEL` is the step in CUDA C (mirroring :meth:`Corridor.numpy_step`), for GPU runs and as the guide's
example of a kernel that writes ``action_mask`` and ``active`` like any other array.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gymnasium import spaces

from warp_drive.env import Constants, CUDAEnvironmentContext, DataFeed

#: head 0's moves: back, stay, step, jump
MOVES = np.array([-1, 0, 1, 2], np.int32)
STAY = 1

KERNEL = r"""
// Specification: Corridor.numpy_step (tests/helpers/corridor_env.py). One block per env, one thread per agent.
extern "C" __global__ void CudaCorridorStep(int* x_arr, int* active_arr, int* action_mask_arr,
                                           const int* sampled_actions_arr, float* observations_arr,
                                           float* rewards_arr, int* in_game_arr, int* done_arr, int* timestep_arr,
                                           int episode_length) {
  (void)done_arr; (void)timestep_arr; (void)episode_length;
  const int env = wkEnvId();
  const int agent = wkAgentId();
  if (agent >= wkNumberAgents) return;
  const int row = env * wkNumberAgents + agent;
  int* mask = action_mask_arr + row * kMaskWidth;
  const int* action = sampled_actions_arr + row * kHeads;
  int x = x_arr[row];
  const bool was_active = active_arr[row] != 0;
  bool illegal = mask[action[0]] == 0;
  if (kHeads == 2) illegal = illegal || mask[4 + action[1]] == 0;
  float reward = 0.0f;
  bool active = was_active;
  if (was_active) {
    reward = kStepCost;
    if (illegal) {
      reward += kIllegalPenalty;
    } else {
      x = min(max(x + kMoves[action[0]], 0), kGoal);
      if (x == kPit) { reward += kPitReward; active = false; }
      else if (x == kGoal) { reward += kGoalReward; active = false; }
    }
  }
  x_arr[row] = x;
  active_arr[row] = active ? 1 : 0;
  rewards_arr[row] = reward;
  // the mask of the next step: what Corridor.legal_mask writes
  mask[0] = active && x >= 1;
  mask[1] = 1;
  mask[2] = active;
  mask[3] = active && x % 2 == 0;
  if (kHeads == 2) { mask[4] = 1; mask[5] = active && x % 2 == 1; }
  float* obs = observations_arr + row * (kGoal + 2);
  for (int k = 0; k <= kGoal; ++k) obs[k] = (active && k == x) ? 1.0f : 0.0f;
  obs[kGoal + 1] = active ? 1.0f : 0.0f;
  if (active) atomicAdd(&in_game_arr[env], 1);  // read by CudaCorridorFinish
}

extern "C" __global__ void CudaCorridorFinish(int* in_game_arr, int* done_arr, int* timestep_arr, int episode_length) {
  const int env = blockIdx.x * blockDim.x + threadIdx.x;
  if (env >= wkNumberEnvs) return;
  const int t = timestep_arr[env] + 1;
  timestep_arr[env] = t;
  if (in_game_arr[env] == 0 || t >= episode_length) done_arr[env] = 1;
  in_game_arr[env] = 0;
}
"""


class Corridor(CUDAEnvironmentContext):
    """The corridor of the module docstring; ``declare_mask`` False computes the legal actions without declaring
    them (an env without masks), ``declare_active`` False keeps the flags under another name (``alive``: an env
    whose agents leave the game without saying so to the trainer)."""

    name = "Corridor"
    numpy_step_is_env_separable = True
    step_kernel_args = ("x", Constants.ACTIVE, Constants.ACTION_MASK, Constants.ACTIONS, Constants.OBSERVATIONS,
                        Constants.REWARDS, "in_game", Constants.DONE, Constants.TIMESTEP, ("episode_length", "meta"))

    def __init__(self, num_agents: int = 3, episode_length: int = 10, goal: int = 6, pit: int = 3, heads: int = 1,
                 step_cost: float = -0.02, illegal_penalty: float = -0.5, pit_reward: float = -1.0,
                 goal_reward: float = 1.0, declare_mask: bool = True, declare_active: bool = True,
                 source_dir: str | None = None, env_backend: str = "cpu") -> None:
        self.num_agents, self.episode_length = num_agents, episode_length
        self.goal, self.pit, self.heads = int(goal), int(pit), int(heads)
        self.step_cost, self.illegal_penalty = float(step_cost), float(illegal_penalty)
        self.pit_reward, self.goal_reward = float(pit_reward), float(goal_reward)
        self.declare_mask, self.declare_active = declare_mask, declare_active
        self.active_name = Constants.ACTIVE if declare_active else "alive"
        self.step_kernel_args = ("x", self.active_name, *self.step_kernel_args[2:])
        self.env_backend = env_backend
        self.mask_width = 4 + 2 * (self.heads == 2)
        self.observation_space = {a: spaces.Box(0.0, 1.0, (self.goal + 2,), np.float32) for a in range(num_agents)}
        space = spaces.Discrete(4) if self.heads == 1 else spaces.MultiDiscrete([4, 2])
        self.action_space = {a: space for a in range(num_agents)}
        if source_dir is not None:
            path = Path(source_dir) / "corridor_step.cu"
            path.write_text(KERNEL)
            self.cuda_source = path

    # ------------------------------------------------------------------ shared by reset() and numpy_step
    def legal_mask(self, x: np.ndarray, active: np.ndarray) -> np.ndarray:
        """``(..., mask_width)`` int32: 1 where an action is legal at cell ``x`` (``active`` nonzero)."""
        on = active != 0
        cols = [on & (x >= 1), np.ones_like(on), on, on & (x % 2 == 0)]
        if self.heads == 2:
            cols += [np.ones_like(on), on & (x % 2 == 1)]
        return np.stack(cols, -1).astype(np.int32)

    def observe(self, x: np.ndarray, active: np.ndarray) -> np.ndarray:
        on = active != 0
        cells = (np.arange(self.goal + 1) == x[..., None]) & on[..., None]
        return np.concatenate([cells, on[..., None]], -1).astype(np.float32)

    # ------------------------------------------------------------------ the env contract
    def reset(self) -> dict:
        obs = self.observe(np.zeros(self.num_agents, np.int32), np.ones(self.num_agents, np.int32))
        return {a: obs[a] for a in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        x, active = np.zeros(self.num_agents, np.int32), np.ones(self.num_agents, np.int32)
        feed.add_data("x", x, save_copy_and_apply_at_reset=True)
        feed.add_data("in_game", np.int32(0), save_copy_and_apply_at_reset=True)
        feed.add_data(self.active_name, active, save_copy_and_apply_at_reset=True)
        if self.declare_mask:
            feed.add_data(Constants.ACTION_MASK, self.legal_mask(x, active), save_copy_and_apply_at_reset=True)
        return feed

    def cuda_constants(self) -> dict:
        return {"kGoal": self.goal, "kPit": self.pit, "kHeads": self.heads, "kMaskWidth": self.mask_width,
                "kStepCost": self.step_cost, "kIllegalPenalty": self.illegal_penalty, "kPitReward": self.pit_reward,
                "kGoalReward": self.goal_reward, "kMoves": tuple(int(m) for m in MOVES)}

    def cuda_step_kernel(self) -> None:
        self.launch("CudaCorridorStep", self.step_kernel_args)
        self.cuda_function_manager.initialize_functions(["CudaCorridorFinish"])
        E = self.cuda_data_manager.num_envs
        self.launch("CudaCorridorFinish", ["in_game", Constants.DONE, Constants.TIMESTEP, ("episode_length", "meta")],
                    grid=(-(-E // 128), 1), block=(128, 1, 1))

    @property
    def step_function_name(self) -> str:
        return "CudaCorridorStep"

    def numpy_step(self, data: dict) -> None:
        x = data["x"]
        active = data[self.active_name]
        mask = data[Constants.ACTION_MASK] if self.declare_mask else self.legal_mask(x, active)
        actions = data[Constants.ACTIONS]
        was = active != 0
        legal = np.take_along_axis(mask[..., :4], actions[..., :1].astype(np.intp), -1)[..., 0] != 0
        if self.heads == 2:
            legal &= np.take_along_axis(mask[..., 4:], actions[..., 1:2].astype(np.intp), -1)[..., 0] != 0
        moves = was & legal
        nx = np.where(moves, np.clip(x + MOVES[actions[..., 0]], 0, self.goal), x).astype(np.int32)
        died, finished = moves & (nx == self.pit), moves & (nx == self.goal)
        reward = np.where(was, np.float32(self.step_cost), np.float32(0.0))
        reward = reward + np.where(was & ~legal, np.float32(self.illegal_penalty), np.float32(0.0))
        reward = reward + np.where(died, np.float32(self.pit_reward), np.float32(0.0))
        reward = reward + np.where(finished, np.float32(self.goal_reward), np.float32(0.0))
        x[...] = nx
        still = was & ~died & ~finished
        active[...] = still
        if self.declare_mask:
            mask[...] = self.legal_mask(x, still)
        data[Constants.OBSERVATIONS][...] = self.observe(x, still)
        data[Constants.REWARDS][...] = reward.astype(np.float32)
        data[Constants.TIMESTEP][...] += 1
        finished_envs = ~still.any(axis=1) | (data[Constants.TIMESTEP] >= data["episode_length"])
        data[Constants.DONE][finished_envs] = 1
