"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_ddpg``.

Thin re-export of :mod:`warp_drive.training.ddpg` (``TrainerDDPG``, ``soft_update``, ``hard_update``).
"""

from warp_drive.training.ddpg import TrainerDDPG, hard_update, soft_update

__all__ = ["TrainerDDPG", "hard_update", "soft_update"]
