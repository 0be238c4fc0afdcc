"""2.7.1 compatibility path: the CPU-vs-GPU consistency checker.

The implementation is :mod:`warp_drive.utils.env_cpu_gpu_consistency_checker`.
"""

from warp_drive.utils.env_cpu_gpu_consistency_checker import (
    ConsistencyReport,
    EnvironmentCPUvsGPU,
    generate_random_actions,
)

__all__ = ["ConsistencyReport", "EnvironmentCPUvsGPU", "generate_random_actions"]
