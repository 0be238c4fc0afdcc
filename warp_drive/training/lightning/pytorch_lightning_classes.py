"""The Lightning classes of this package bound to the ``pytorch_lightning`` distribution, imported
from :mod:`warp_drive.training.pytorch_lightning` (WarpDrive 2.7.1's import path): each is its shared
implementation (a mixin) on the matching ``pytorch_lightning`` base class, so that
``pytorch_lightning.Trainer`` accepts it (:mod:`~warp_drive.training.lightning.binding`).
"""

from __future__ import annotations

from warp_drive.training.lightning.binding import bind_into

__all__ = bind_into("pytorch_lightning", globals())  # the classes of binding.CLASSES
