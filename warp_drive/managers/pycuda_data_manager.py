"""PyCUDADataManager: the data store on a CUDA device (PyCUDA and PyTorch share it)."""

from __future__ import annotations

import torch

from warp_drive.managers.data_manager import CUDADataManager, DataManager
from warp_drive.cuda.device import init_cuda

__all__ = ["CUDADataManager", "CudaTensorHolder", "PyCUDADataManager"]


class PyCUDADataManager(DataManager):
    """Arrays as CUDA torch tensors on the device's primary context.

    Args:
        num_agents, num_envs, blocks_per_env, episode_length: as
            :class:`~warp_drive.managers.data_manager.DataManager` (2.7.1's positional order).
        device_id: CUDA device (default: torch's current device).
    """

    backend = "pycuda"

    def __init__(
        self,
        num_agents: int = 1,
        num_envs: int = 1,
        blocks_per_env: int = 1,
        episode_length: int = 1,
        device_id: int | None = None,
    ) -> None:
        init_cuda(device_id)
        self.device = torch.device("cuda", torch.cuda.current_device() if device_id is None else device_id)
        super().__init__(num_agents, num_envs, blocks_per_env, episode_length)


class CudaTensorHolder:
    """A torch tensor's device pointer in the form pycuda kernels accept (``gpudata``), as 2.7.1's
    class of this name; it keeps the tensor alive. Kernels of this package also take the tensor
    itself."""

    __slots__ = ("tensor", "gpudata")

    def __init__(self, t: torch.Tensor) -> None:
        self.tensor = t
        self.gpudata = t.data_ptr()

    def get_pointer(self) -> int:
        return self.gpudata

    def __int__(self) -> int:
        return self.gpudata

    def __repr__(self) -> str:
        return f"CudaTensorHolder(0x{self.gpudata:x}, shape={tuple(self.tensor.shape)})"
