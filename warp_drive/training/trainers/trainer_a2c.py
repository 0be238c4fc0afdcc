"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_a2c``.

``TrainerA2C`` is :class:`warp_drive.training.run.trainer271.Trainer271` (A2C and PPO policies, 2.7.1's
constructor arguments and names).
"""

from warp_drive.training.run.trainer271 import Trainer271

TrainerA2C = Trainer271

__all__ = ["TrainerA2C"]
