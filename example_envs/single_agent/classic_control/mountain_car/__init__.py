"""2.7.1 compatibility path: package of the MountainCar env (see :mod:`example_envs.classic_control.mountain_car`)."""
