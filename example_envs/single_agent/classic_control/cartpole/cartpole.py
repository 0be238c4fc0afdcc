"""2.7.1 compatibility path: the CartPole env classes of 2.7.1.

The implementation is :mod:`example_envs.classic_control.cartpole.cartpole` (one dual-mode class;
the CUDA name is the same class).
"""

from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv, CUDAClassicControlCartPoleEnv

__all__ = ["ClassicControlCartPoleEnv", "CUDAClassicControlCartPoleEnv"]
