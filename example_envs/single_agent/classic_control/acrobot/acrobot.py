"""2.7.1 compatibility path: the Acrobot env classes of 2.7.1.

The implementation is :mod:`example_envs.classic_control.acrobot.acrobot` (one dual-mode class;
the CUDA name is the same class).
"""

from example_envs.classic_control.acrobot.acrobot import ClassicControlAcrobotEnv, CUDAClassicControlAcrobotEnv

__all__ = ["ClassicControlAcrobotEnv", "CUDAClassicControlAcrobotEnv"]
