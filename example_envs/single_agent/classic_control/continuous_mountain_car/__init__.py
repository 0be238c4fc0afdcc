"""2.7.1 compatibility path: package of the ContinuousMountainCar env (see :mod:`example_envs.classic_control.continuous_mountain_car`)."""
