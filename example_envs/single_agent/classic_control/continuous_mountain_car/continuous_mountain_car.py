"""2.7.1 compatibility path: the ContinuousMountainCar env classes of 2.7.1.

The implementation is :mod:`example_envs.classic_control.continuous_mountain_car.continuous_mountain_car` (one dual-mode class;
the CUDA name is the same class).
"""

from example_envs.classic_control.continuous_mountain_car.continuous_mountain_car import ClassicControlContinuousMountainCarEnv, CUDAClassicControlContinuousMountainCarEnv

__all__ = ["ClassicControlContinuousMountainCarEnv", "CUDAClassicControlContinuousMountainCarEnv"]
