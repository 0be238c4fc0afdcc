"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_a2c``.

``TrainerA2C`` is :class:`warp_drive.training.trainer.Trainer` (A2C and PPO policies, 2.7.1's
constructor arguments).
"""

from warp_drive.training.trainer import Trainer

TrainerA2C = Trainer

__all__ = ["TrainerA2C"]
