"""MPE ``simple_spread_v3`` (cooperative navigation): N agents cover N landmarks without colliding.

Dual mode: :meth:`MpeSimpleSpreadEnv.numpy_step` (the shared skeleton of
:class:`~example_envs.mpe.base.MpeEnv` with this module's rewards and observations) on the CPU,
``simple_spread_step.cu`` on the GPU. Matches ``mpe2.simple_spread_v3`` (``N``, ``local_ratio``,
``max_cycles`` = ``episode_length``, discrete actions) step for step; see ``../README.md`` for the
observation layout, the rewards, the tolerances and where JaxMARL's port differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from example_envs import check_float, check_int, reject_unknown_kwargs
from example_envs.mpe import constants as C
from example_envs.mpe.base import MAX_AGENTS, WORLD_STATE, MpeEnv
from warp_drive.env import DataFeed
from example_envs.mpe.physics import distance
from warp_drive.env import Constants

F32 = np.float32
#: the data store array of the world state per env (what ``critic_input: global_state`` reads)
STATE = Constants.STATE


def spread_rewards(agent_pos: np.ndarray, landmark_pos: np.ndarray, local_ratio: np.float32,
                   contact_distance: np.float32) -> np.ndarray:
    """(E, N) float32 rewards: ``global * (1 - local_ratio) + local * local_ratio`` with
    ``global = -sum_l min_i |agent_i - landmark_l|`` (landmarks in order) and ``local = -(number of
    other agents closer than the sum of the radii)``. CUDA twin: ``MpeSpreadReward``."""
    n = agent_pos.shape[1]
    total = np.zeros(agent_pos.shape[0], F32)
    for l in range(landmark_pos.shape[1]):
        total = total - distance(agent_pos - landmark_pos[:, l : l + 1]).min(axis=1)
    local = np.zeros(agent_pos.shape[:2], F32)
    for j in range(n):
        touching = distance(agent_pos - agent_pos[:, j : j + 1]) < contact_distance
        touching[:, j] = False
        local = local - touching.astype(F32)
    global_weight = F32(1.0) - local_ratio
    return (total[:, None] * global_weight + local * local_ratio).astype(F32)


def spread_observations(agent_pos: np.ndarray, agent_vel: np.ndarray, landmark_pos: np.ndarray) -> np.ndarray:
    """(E, N, 6 N) float32: [own velocity, own position, landmark_l - own position (l in order),
    agent_j - own position (j != i in order), the others' words (zeros: all agents are silent)].
    CUDA twin: ``MpeSpreadObserve``."""
    e, n, _ = agent_pos.shape
    rel_landmarks = landmark_pos[:, None, :, :] - agent_pos[:, :, None, :]  # (E, N, L, 2)
    rel_agents = agent_pos[:, None, :, :] - agent_pos[:, :, None, :]  # (E, i, j, 2)
    others = ~np.eye(n, dtype=bool)
    rel_others = rel_agents[:, others].reshape(e, n, n - 1, C.DIM_P)
    comm = np.zeros((e, n, (n - 1) * C.SPREAD_DIM_C), F32)
    return np.concatenate(
        [agent_vel, agent_pos, rel_landmarks.reshape(e, n, -1), rel_others.reshape(e, n, -1), comm], axis=-1
    ).astype(F32)


def spread_state(agent_pos: np.ndarray, agent_vel: np.ndarray, landmark_pos: np.ndarray) -> np.ndarray:
    """(E, 6 N) float32, the env's ``state`` for a centralized critic (``critic_input: global_state``): every
    agent's position, every agent's velocity, every landmark's position, in order. CUDA twin:
    ``MpeSpreadWriteState``."""
    e = agent_pos.shape[0]
    return np.concatenate([agent_pos.reshape(e, -1), agent_vel.reshape(e, -1), landmark_pos.reshape(e, -1)],
                          axis=-1).astype(F32)


class MpeSimpleSpreadEnv(MpeEnv):
    """``simple_spread_v3`` with discrete actions (defaults: ``constants.SPREAD_DEFAULTS``).

    Args:
        num_agents: N agents and N landmarks (``mpe2``'s ``N``), 2 <= N <= 1024.
        local_ratio: weight of the local (collision) reward; the shared distance reward gets
            1 - local_ratio (in [0, 1]).
        episode_length: steps per episode (``mpe2``'s ``max_cycles``); every episode ends there,
            as a truncation.
        seed: seed of the host ``reset()`` (``mpe2``'s ``reset(seed=...)`` layout) and of the
            device's start-state draws.
        fresh_start_states: True (default): every replica and every episode starts from its own
            uniform layout drawn on the device; False: every reset restores the host layout.
        env_backend: "cpu" or "pycuda" (overwritten by the EnvWrapper).

    Raises:
        ConfigError: an argument is unknown, has the wrong type or is out of range.
    """

    name = "MpeSimpleSpread"
    cuda_source = Path(__file__).with_name("simple_spread_step.cu")
    agents_collide = True
    agent_size = C.SPREAD_AGENT_SIZE
    step_kernel_args = (
        "agent_pos", "agent_vel", "landmark_pos", Constants.ACTIONS, Constants.OBSERVATIONS, Constants.REWARDS,
        STATE, Constants.DONE, Constants.TRUNCATED, Constants.TIMESTEP, "local_ratio", ("episode_length", "meta"),
    )
    start_state_args = (*WORLD_STATE, Constants.OBSERVATIONS, STATE)

    def __init__(
        self,
        num_agents: int = 3,
        local_ratio: float = 0.5,
        episode_length: int = 25,
        seed: int | None = None,
        fresh_start_states: bool = True,
        env_backend: str = "cpu",
        **unknown: Any,
    ) -> None:
        reject_unknown_kwargs(self.name, unknown, C.SPREAD_DEFAULTS)
        self.num_agents = check_int(self.name, "num_agents", num_agents, minimum=2, maximum=MAX_AGENTS)
        self.num_landmarks = self.num_agents
        self.local_ratio = check_float(self.name, "local_ratio", local_ratio, at_least=0.0, at_most=1.0,
                                       fix="it weighs the collision reward against the coverage reward")
        self.movable = np.ones(self.num_agents, bool)
        self.obs_dim = C.spread_obs_dim(self.num_agents)
        self.action_space = {i: spaces.Discrete(C.NUM_MOVE_ACTIONS) for i in range(self.num_agents)}
        self._init_common(episode_length, seed, fresh_start_states, env_backend)

    def get_data_dictionary(self) -> DataFeed:
        """The world state, ``local_ratio`` and the ``state`` row of every env (:func:`spread_state`)."""
        feed = super().get_data_dictionary()
        world = {k: v[None] for k, v in self._host_state.items()}
        feed.add_data(STATE, spread_state(world["agent_pos"], world["agent_vel"], world["landmark_pos"])[0],
                      save_copy_and_apply_at_reset=True)
        return feed

    def cuda_constants(self) -> dict[str, Any]:
        """The MPE constants and ``kStateDim``."""
        return {**super().cuda_constants(), "kStateDim": C.spread_state_dim(self.num_agents)}

    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """:meth:`MpeEnv.numpy_step`, then the ``state`` of the new world."""
        super().numpy_step(data)
        data[STATE][...] = spread_state(data["agent_pos"], data["agent_vel"], data["landmark_pos"])

    def numpy_start_state(self, data: Mapping[str, Any], rows: np.ndarray, key: Any) -> None:
        """:meth:`MpeEnv.numpy_start_state`, then the ``state`` of the drawn world."""
        super().numpy_start_state(data, rows, key)
        data[STATE][rows] = spread_state(data["agent_pos"][rows], data["agent_vel"][rows], data["landmark_pos"][rows])

    def scalar_data(self) -> dict[str, float]:
        """``local_ratio``, passed to the kernel by value."""
        return {"local_ratio": self.local_ratio}

    def compute_rewards(self, state: Mapping[str, np.ndarray]) -> np.ndarray:
        """(E, N) rewards (:func:`spread_rewards`)."""
        return spread_rewards(state["agent_pos"], state["landmark_pos"], F32(self.local_ratio), self.contact_distance)

    def observe(self, state: Mapping[str, np.ndarray]) -> np.ndarray:
        """(E, N, obs_dim) observations (:func:`spread_observations`)."""
        return spread_observations(state["agent_pos"], state["agent_vel"], state["landmark_pos"])
