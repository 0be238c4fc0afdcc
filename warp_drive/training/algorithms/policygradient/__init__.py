"""2.7.1 compatibility path: ``warp_drive.training.algorithms.policygradient`` (A2C and PPO live in
:mod:`warp_drive.training.algorithms.actor_critic`)."""
