"""2.7.1 compatibility path: ``warp_drive.training.trainers`` (its trainer package).

The trainer is :class:`warp_drive.training.trainer.Trainer`; see ``trainer_a2c``, ``trainer_base``
and ``trainer_ddpg`` in this package for 2.7.1's module names.
"""
