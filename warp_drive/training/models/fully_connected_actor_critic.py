"""2.7.1 compatibility path: ``warp_drive.training.models.fully_connected_actor_critic`` (DDPG's networks, from
:mod:`warp_drive.training.models.actor_critic`)."""

from warp_drive.training.models.actor_critic import FullyConnectedActionValueCritic, FullyConnectedActor

__all__ = ["FullyConnectedActionValueCritic", "FullyConnectedActor"]
