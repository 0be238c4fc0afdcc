"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_ddpg`` (``TrainerDDPG`` from
:mod:`warp_drive.training.run.trainer271`, ``soft_update`` / ``hard_update`` from
:mod:`warp_drive.training.algorithms.ddpg`)."""

from warp_drive.training.algorithms.ddpg import hard_update, soft_update
from warp_drive.training.run.trainer271 import TrainerDDPG

__all__ = ["TrainerDDPG", "hard_update", "soft_update"]
