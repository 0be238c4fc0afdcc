"""A2C and PPO: the actor-critic algorithms whose heads the sampler kernels sample.

An algorithm folder behind the seam of :mod:`warp_drive.training.algorithms.base`: ``config``
parses the ``policy.<tag>`` section (:class:`ActorCriticConfig`), ``policy`` holds
:class:`ActorCriticPolicy` and its builder; the losses are :mod:`~warp_drive.training.algorithms.actor_critic.a2c`
and :mod:`~warp_drive.training.algorithms.actor_critic.ppo`, the update loop :mod:`~warp_drive.training.algorithms.actor_critic.update`.
The registry entries (:mod:`warp_drive.config.algorithms`) name :data:`build_a2c` and :data:`build_ppo`.
"""

from warp_drive.training.algorithms.actor_critic.a2c import A2C
from warp_drive.training.algorithms.actor_critic.config import ALGORITHMS, DEFAULT_NUM_EPOCHS, ActorCriticConfig
from warp_drive.training.algorithms.actor_critic.policy import (
    OPTIMIZER,
    ActorCritic,
    ActorCriticPolicy,
    build_policy,
)
from warp_drive.training.algorithms.actor_critic.ppo import PPO

#: the registry entries ``A2C`` and ``PPO``
build_a2c = ActorCritic(A2C)
build_ppo = ActorCritic(PPO)

__all__ = ["ALGORITHMS", "DEFAULT_NUM_EPOCHS", "OPTIMIZER", "ActorCritic", "ActorCriticConfig", "ActorCriticPolicy",
           "build_a2c", "build_policy", "build_ppo"]
