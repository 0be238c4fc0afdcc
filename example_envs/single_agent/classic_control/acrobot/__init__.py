"""2.7.1 compatibility path: package of the Acrobot env (see :mod:`example_envs.classic_control.acrobot`)."""
