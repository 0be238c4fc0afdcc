"""2.7.1 compatibility path: ``warp_drive.training.deprecate.trainer``.

2.7.1's pre-refactor single-class trainer; here it is :class:`warp_drive.training.trainer.Trainer`.
"""

from warp_drive.training.trainer import Trainer

__all__ = ["Trainer"]
