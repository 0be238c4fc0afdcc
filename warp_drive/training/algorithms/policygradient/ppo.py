"""2.7.1 compatibility path: ``warp_drive.training.algorithms.policygradient.ppo``.

:class:`warp_drive.training.algorithms.actor_critic.ppo.PPO` (a real clipped PPO with stored old log-probs; same
interface as our A2C).
"""

from warp_drive.training.algorithms.actor_critic.ppo import PPO

__all__ = ["PPO"]
