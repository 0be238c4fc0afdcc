"""2.7.1 compatibility path: the PyCUDA function manager and the services built on it
(:mod:`warp_drive.managers.pycuda_function_manager`, ``sampler``, ``environment_reset``,
``log_controller``)."""

from warp_drive.managers.data_manager import CUDADataManager
from warp_drive.services.environment_reset import CUDAEnvironmentReset, PyCUDAEnvironmentReset
from warp_drive.managers.function_manager import CUDAFunctionFeed, CUDAFunctionManager
from warp_drive.services.log_controller import CUDALogController, PyCUDALogController
from warp_drive.managers.pycuda_data_manager import CudaTensorHolder, PyCUDADataManager
from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager
from warp_drive.services.sampler import CUDASampler, PyCUDASampler
from warp_drive.cuda import project_root as get_project_root
from warp_drive.vocab.registrar import EnvironmentRegistrar

__all__ = [
    "CUDADataManager",
    "CUDAEnvironmentReset",
    "CUDAFunctionFeed",
    "CUDAFunctionManager",
    "CUDALogController",
    "CUDASampler",
    "CudaTensorHolder",
    "EnvironmentRegistrar",
    "PyCUDADataManager",
    "PyCUDAEnvironmentReset",
    "PyCUDAFunctionManager",
    "PyCUDALogController",
    "PyCUDASampler",
    "get_project_root",
]
