"""2.7.1 compatibility path: the Pendulum env classes of 2.7.1.

The implementation is :mod:`example_envs.classic_control.pendulum.pendulum` (one dual-mode class;
the CUDA name is the same class).
"""

from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv, CUDAClassicControlPendulumEnv

__all__ = ["ClassicControlPendulumEnv", "CUDAClassicControlPendulumEnv"]
