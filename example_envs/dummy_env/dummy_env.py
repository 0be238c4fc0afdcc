"""DummyEnv: the smallest dual-mode env, for tutorials and framework tests.

Every agent holds two floats (x, y), starting at (i + 1, i + 1) for agent i. Per step, an agent
whose action is 1 updates ``x /= multiplier`` and ``y *= multiplier`` (action 0 holds still). The
observation is (x, y), the reward is y / target, and an env is done when any agent reaches
``y >= target`` or t >= T. The CUDA kernel needs no barrier: the done flag is raised with
``atomicMax`` by any agent, so it works for any number of blocks per env.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from example_envs import check_backend, check_float, check_int, reject_unknown_kwargs
from example_envs.dummy_env import constants as C
from warp_drive.env import ArraySpec, Constants, CUDAEnvironmentContext, DataFeed

F32 = np.float32


class DummyEnv(CUDAEnvironmentContext):
    """Tutorial env (defaults: ``constants.DEFAULTS``).

    Args:
        num_agents: agents per env (>= 1).
        episode_length: T (>= 1).
        multiplier: update factor (> 0).
        target: y threshold that ends the episode (> 0).
        env_backend: "cpu" or "pycuda" (overwritten by the EnvWrapper).
    """

    name = "DummyEnv"
    cuda_source = Path(__file__).with_name("dummy_env_step.cu")
    step_kernel_args = (
        "x",
        "y",
        Constants.ACTIONS,
        Constants.OBSERVATIONS,
        Constants.REWARDS,
        Constants.DONE,
        Constants.TIMESTEP,
        "multiplier",
        "target",
        ("episode_length", "meta"),
    )
    # writes only _done_ (truncation then follows the time limit rule): any agent may end the
    # episode, and with several blocks per env no thread sees them all within one launch.
    array_schema = {
        "x": ArraySpec(("num_agents",)),
        "y": ArraySpec(("num_agents",)),
        "multiplier": ArraySpec(()),
        "target": ArraySpec(()),
    }

    def __init__(
        self,
        num_agents: int = 5,
        episode_length: int = 20,
        multiplier: float = 2.0,
        target: float = 100.0,
        env_backend: str = "cpu",
        **unknown: Any,
    ) -> None:
        reject_unknown_kwargs(self.name, unknown, C.DEFAULTS)
        self.num_agents = check_int(self.name, "num_agents", num_agents, minimum=1)
        self.episode_length = check_int(self.name, "episode_length", episode_length, minimum=1)
        self.multiplier = check_float(self.name, "multiplier", multiplier, above=0.0)
        self.target = check_float(self.name, "target", target, above=0.0)
        self.env_backend = check_backend(self.name, env_backend)
        box = spaces.Box(-np.inf, np.inf, shape=(C.OBS_DIM,), dtype=np.float32)
        self.observation_space = {i: box for i in range(self.num_agents)}
        self.action_space = {i: spaces.Discrete(C.NUM_ACTIONS) for i in range(self.num_agents)}
        self.timestep = 0

    def initial_state(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """(x, y) at reset: agent i starts at (i + 1, i + 1)."""
        start = np.arange(1, self.num_agents + 1, dtype=F32)
        return start.copy(), start.copy()

    def reset(self) -> dict[int, npt.NDArray[np.float32]]:
        """Host reset of one env; returns ``{agent_id: (x, y)}``."""
        self.timestep = 0
        x, y = self.initial_state()
        return {i: np.array([x[i], y[i]], F32) for i in range(self.num_agents)}

    def get_data_dictionary(self) -> DataFeed:
        """x, y (reset-copied -> (E, N)) and the two parameters."""
        x, y = self.initial_state()
        feed = DataFeed()
        feed.add_data("x", x, save_copy_and_apply_at_reset=True)
        feed.add_data("y", y, save_copy_and_apply_at_reset=True)
        feed.add_data("multiplier", float(self.multiplier))
        feed.add_data("target", float(self.target))
        return feed

    def cuda_constants(self) -> dict[str, Any]:
        return {"kObsDim": C.OBS_DIM, "kUpdateAction": C.UPDATE_ACTION}

    def numpy_step(self, data: Mapping[str, Any]) -> None:
        """Step every env in place; mirrors ``CudaDummyEnvStep``."""
        x, y = data["x"], data["y"]
        multiplier, target = F32(data["multiplier"]), F32(data["target"])
        update = data[Constants.ACTIONS][..., 0] == C.UPDATE_ACTION
        x[...] = np.where(update, x / multiplier, x)
        y[...] = np.where(update, y * multiplier, y)
        data[Constants.OBSERVATIONS][...] = np.stack([x, y], axis=2)
        data[Constants.REWARDS][...] = y / target
        timestep, done = data[Constants.TIMESTEP], data[Constants.DONE]
        timestep += 1
        done[(y >= target).any(axis=1) | (timestep >= int(data["episode_length"]))] = 1
