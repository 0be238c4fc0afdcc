"""The Lightning classes of this package bound to the ``lightning`` distribution, imported from
:mod:`warp_drive.training.lightning` (:mod:`~warp_drive.training.lightning.binding`)."""

from __future__ import annotations

from warp_drive.training.lightning.binding import bind_into

__all__ = bind_into("lightning", globals())  # the classes of binding.CLASSES
