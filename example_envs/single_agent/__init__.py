"""2.7.1 compatibility path: the single-agent example envs of 2.7.1.

The implementation is :mod:`example_envs.classic_control` (CPU and CUDA in one class per env).
"""
