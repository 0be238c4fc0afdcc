"""2.7.1 compatibility path: package of the Pendulum env (see :mod:`example_envs.classic_control.pendulum`)."""
