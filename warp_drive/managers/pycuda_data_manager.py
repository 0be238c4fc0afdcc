"""PyCUDADataManager: the data store on a CUDA device (PyCUDA and PyTorch share it)."""

from __future__ import annotations

import torch

from warp_drive.managers.data_manager import DataManager
from warp_drive.utils.device import init_cuda


class PyCUDADataManager(DataManager):
    """Arrays as CUDA torch tensors on the device's primary context.

    Kernels launched through :class:`~warp_drive.managers.pycuda_function_manager.PyCUDAFunctionManager`
    receive each tensor's device pointer, so kernels and PyTorch read and write the same memory.

    Args:
        device_id: CUDA device (default: torch's current device).
        Other arguments as :class:`~warp_drive.managers.data_manager.DataManager`.
    """

    backend = "pycuda"

    def __init__(
        self,
        num_agents: int = 1,
        num_envs: int = 1,
        episode_length: int = 1,
        blocks_per_env: int = 1,
        device_id: int | None = None,
    ) -> None:
        init_cuda(device_id)
        self._device = torch.device("cuda", torch.cuda.current_device() if device_id is None else device_id)
        super().__init__(num_agents, num_envs, episode_length, blocks_per_env)

    @property
    def device(self) -> torch.device:
        return self._device


# the reference's class name
CUDADataManager = PyCUDADataManager
