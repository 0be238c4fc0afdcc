"""LogController: record the arrays flagged ``log_data_across_episode`` of one env, every step."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError
from warp_drive.managers.function_manager import FunctionManager

LOG_THREADS = 256


class LogController:
    """Copies one env's logged arrays into ``<name>_for_log`` of shape (T + 1, ...) on the device.

    Slot 0 holds the state at reset; ``update_log(dm, t)`` writes slot t.
    """

    def __init__(self, function_manager: FunctionManager) -> None:
        self._fm = function_manager
        function_manager.initialize_functions(["log_one_step", "reset_log_mask", "update_log_mask"])
        self.last_valid_step = -1
        self._env_id = 0

    def reset_log(self, data_manager: Any, env_id: int = 0) -> None:
        """Select the env to log, clear the log and record step 0."""
        if not 0 <= env_id < data_manager.num_envs:
            raise ConfigError(f"env_id={env_id} is out of range [0, {data_manager.num_envs})")
        self._env_id = int(env_id)
        mask = data_manager.data_on_device_via_torch(Constants.LOG_MASK)
        self._fm.launch("reset_log_mask", [mask, data_manager.episode_length], grid=(1, 1), block=(1, 1, 1))
        self.last_valid_step = -1
        self.update_log(data_manager, 0)

    def update_log(self, data_manager: Any, step: int) -> None:
        """Record every logged array at slot ``step`` (must increase, at most episode_length)."""
        T = data_manager.episode_length
        if step <= self.last_valid_step or step > T:
            raise ConfigError(
                f"log step {step} must be greater than the last logged step {self.last_valid_step} and at most {T}"
            )
        E = data_manager.num_envs
        for name in data_manager.log_data_list:
            data = data_manager.data_on_device_via_torch(name)
            log = data_manager.data_on_device_via_torch(name + Constants.LOG_SUFFIX)
            feature_size = data.numel() // E
            grid = (max(1, -(-feature_size // LOG_THREADS)), 1)
            self._fm.launch("log_one_step", [log, data, feature_size, step, self._env_id, T], grid=grid, block=(LOG_THREADS, 1, 1))
        mask = data_manager.data_on_device_via_torch(Constants.LOG_MASK)
        self._fm.launch("update_log_mask", [mask, step, T], grid=(1, 1), block=(1, 1, 1))
        self.last_valid_step = step

    def fetch_log(
        self,
        data_manager: Any,
        names: Sequence[str] | None = None,
        last_step: int | None = None,
        check_last_valid_step: bool = True,
    ) -> dict[str, np.ndarray]:
        """``{<name>_for_log: array[:last_step + 1]}`` for the requested logged arrays."""
        last = self.last_valid_step if last_step is None else last_step
        if check_last_valid_step:
            mask = data_manager.pull_data_from_device(Constants.LOG_MASK)
            if not np.array_equal(mask, np.arange(mask.size) <= self.last_valid_step):
                raise ConfigError(f"the device log mask {mask.tolist()} does not match the last logged step {self.last_valid_step}")
        out = {}
        for name in names or data_manager.log_data_list:
            if name not in data_manager.log_data_list:
                raise ConfigError(f"'{name}' is not logged; logged: {data_manager.log_data_list}")
            out[name + Constants.LOG_SUFFIX] = data_manager.pull_data_from_device(name + Constants.LOG_SUFFIX)[: last + 1]
        return out


PyCUDALogController = LogController
CUDALogController = LogController
