"""2.7.1 compatibility path: the Numba function manager and the services built on it
(:mod:`warp_drive.managers.numba_function_manager`, :mod:`warp_drive.services.numba_services`)."""

from warp_drive.managers.function_manager import CUDAFunctionFeed, CUDAFunctionManager
from warp_drive.managers.numba_data_manager import NumbaDataManager
from warp_drive.managers.numba_function_manager import NumbaFunctionManager
from warp_drive.services.numba_services import NumbaEnvironmentReset, NumbaLogController, NumbaSampler
from warp_drive.cuda import project_root as get_project_root
from warp_drive.vocab.registrar import EnvironmentRegistrar

__all__ = [
    "CUDAFunctionFeed",
    "CUDAFunctionManager",
    "EnvironmentRegistrar",
    "NumbaDataManager",
    "NumbaEnvironmentReset",
    "NumbaFunctionManager",
    "NumbaLogController",
    "NumbaSampler",
    "get_project_root",
]
