"""2.7.1 compatibility path: package of the CartPole env (see :mod:`example_envs.classic_control.cartpole`)."""
