"""2.7.1 compatibility path: the MountainCar env classes of 2.7.1.

The implementation is :mod:`example_envs.classic_control.mountain_car.mountain_car` (one dual-mode class;
the CUDA name is the same class).
"""

from example_envs.classic_control.mountain_car.mountain_car import ClassicControlMountainCarEnv, CUDAClassicControlMountainCarEnv

__all__ = ["ClassicControlMountainCarEnv", "CUDAClassicControlMountainCarEnv"]
