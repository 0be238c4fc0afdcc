"""NumbaDataManager: the data store of the Numba backend (the same torch tensors as every backend).

Arrays are torch tensors on the CUDA device (under Numba's CUDA simulator: in CPU memory). Numba
kernels receive them as Numba device arrays over the same memory (``__cuda_array_interface__``), the
CUDA C service kernels as raw pointers and PyTorch as the tensors themselves: nothing is copied
between them. Re-uploading (:meth:`reset_device`) copies into the same memory, so every view stays
valid (2.7.1 replaced the Numba array instead, detaching torch's view: its defect 13).
"""

from __future__ import annotations

from typing import Any

from warp_drive.managers.data_manager import DataManager
from warp_drive.numba_backend.runtime import numba_cuda, simulated, store_device

__all__ = ["NumbaDataManager"]


class NumbaDataManager(DataManager):
    """The store as torch tensors, handed to Numba kernels in place.

    Args:
        num_agents, num_envs, blocks_per_env, episode_length: as
            :class:`~warp_drive.managers.data_manager.DataManager` (2.7.1's positional order).
        device_id: CUDA device (default: torch's current device; ignored under the simulator).

    Raises:
        DeviceUnavailableError: numba-cuda is missing, or there is neither a GPU nor the simulator.
    """

    backend = "numba"

    def __init__(
        self,
        num_agents: int = 1,
        num_envs: int = 1,
        blocks_per_env: int = 1,
        episode_length: int = 1,
        device_id: int | None = None,
    ) -> None:
        self.device = store_device(device_id)
        self.simulated = simulated()
        super().__init__(num_agents, num_envs, blocks_per_env, episode_length)

    def numba_array(self, name: str) -> Any:
        """``name`` as a Numba kernel sees it: a Numba device array over the tensor's memory (under
        the simulator a NumPy view); a scalar's value as it is."""
        value = self.device_data(name)
        if name in self.scalar_data_list:
            return value
        if self.simulated:
            return value.numpy()
        return numba_cuda().as_cuda_array(value.detach(), sync=False)
