"""2.7.1 compatibility path: ``warp_drive.training.deprecate.trainer``.

2.7.1's pre-refactor single-class trainer; here it is :class:`warp_drive.training.run.trainer271.Trainer271`.
"""

from warp_drive.training.run.trainer271 import Trainer271

Trainer = Trainer271

__all__ = ["Trainer"]
