"""2.7.1 compatibility path: ``warp_drive.training.algorithms.policygradient.a2c``.

:class:`warp_drive.training.algorithms.actor_critic.a2c.A2C` (keyword arguments ``gamma``, ``gae_lambda``, ... and
``compute_advantages`` / ``compute_loss``; 2.7.1's ``discount_factor_gamma`` and
``compute_loss_and_metrics`` are not provided).
"""

from warp_drive.training.algorithms.actor_critic.a2c import A2C

__all__ = ["A2C"]
