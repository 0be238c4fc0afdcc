"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_ddpg``.

DDPG is not implemented here: ``TrainerDDPG`` raises a ConfigError naming what to use instead; the
target-network helpers work. See :mod:`warp_drive.training.ddpg`.
"""

from warp_drive.training.ddpg import TrainerDDPG, hard_update, soft_update

__all__ = ["TrainerDDPG", "hard_update", "soft_update"]
