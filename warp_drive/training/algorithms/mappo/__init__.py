"""MAPPO: PPO with a centralized critic and value normalisation (the registry entry ``MAPPO``).

An algorithm folder behind the seam of :mod:`warp_drive.training.algorithms.base`: ``config`` parses the
``policy.<tag>`` section (:class:`MAPPOConfig`: PPO's keys with MAPPO's defaults). The policy is the
actor-critic one (:class:`~warp_drive.training.algorithms.actor_critic.ActorCriticPolicy`) with PPO's loss;
what its critic sees is the rollout hook :meth:`Policy.observe <warp_drive.training.algorithms.base.Policy.observe>`
(``critic_input``, :mod:`warp_drive.training.network_inputs`).
"""

from warp_drive.training.algorithms.actor_critic import ActorCritic
from warp_drive.training.algorithms.actor_critic.ppo import PPO
from warp_drive.training.algorithms.mappo.config import MAPPO_DEFAULTS, MAPPOConfig

#: the registry entry ``MAPPO``'s builder
build_mappo = ActorCritic(PPO)

__all__ = ["MAPPO_DEFAULTS", "MAPPOConfig", "build_mappo"]
