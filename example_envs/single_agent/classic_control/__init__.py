"""2.7.1 compatibility path: the classic-control envs of 2.7.1, one module per env.

The implementation is :mod:`example_envs.classic_control`.
"""
