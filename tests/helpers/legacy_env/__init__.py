"""A custom env written the way WarpDrive 2.7.1 users write them (a test fixture, not an example env).

See :mod:`tests.helpers.legacy_env.legacy_crowd`.
"""

from tests.helpers.legacy_env.legacy_crowd import CUDA_SOURCE, CUDALegacyCrowd, LegacyCrowd, crowd_step

__all__ = ["CUDA_SOURCE", "CUDALegacyCrowd", "LegacyCrowd", "crowd_step"]
