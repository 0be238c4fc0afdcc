"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_ddpg`` (from :mod:`warp_drive.training.ddpg`)."""

from warp_drive.training.ddpg import TrainerDDPG, hard_update, soft_update

__all__ = ["TrainerDDPG", "hard_update", "soft_update"]
