"""2.7.1 compatibility path: :class:`~warp_drive.managers.pycuda_data_manager.PyCUDADataManager`
and its module's other names."""

from warp_drive.managers.data_manager import CUDADataManager
from warp_drive.managers.pycuda_data_manager import CudaTensorHolder, PyCUDADataManager

__all__ = ["CUDADataManager", "CudaTensorHolder", "PyCUDADataManager"]
