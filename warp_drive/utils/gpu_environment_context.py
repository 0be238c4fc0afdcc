"""2.7.1 compatibility path: ``CUDAEnvironmentContext``, the env base class (:mod:`warp_drive.env.context`)."""

from warp_drive.env.context import CUDAEnvironmentContext, has_vectorised_cpu_step

__all__ = ["CUDAEnvironmentContext", "has_vectorised_cpu_step"]
