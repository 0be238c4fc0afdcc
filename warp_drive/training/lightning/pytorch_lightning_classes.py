"""The Lightning classes of this package bound to the ``pytorch_lightning`` distribution, imported from
:mod:`warp_drive.training.pytorch_lightning` (2.7.1's import path; :mod:`~warp_drive.training.lightning.binding`)."""

from __future__ import annotations

from warp_drive.training.lightning.binding import bind_into

__all__ = bind_into("pytorch_lightning", globals())  # the classes of binding.CLASSES
