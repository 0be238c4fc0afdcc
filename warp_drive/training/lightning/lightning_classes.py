"""The Lightning classes of this package bound to the ``lightning`` distribution.

Each class is the shared implementation (a mixin from :mod:`~warp_drive.training.lightning.module`,
:mod:`~warp_drive.training.lightning.callbacks` or :mod:`~warp_drive.training.lightning.datamodule`)
on top of the matching ``lightning`` base class, so that ``lightning.Trainer`` accepts it;
:mod:`~warp_drive.training.lightning.pytorch_lightning_classes` binds the same mixins to ``pytorch_lightning``.
Users import these from warp_drive.training.lightning.
"""

from __future__ import annotations

from warp_drive.training.lightning.binding import bind_into

#: WarpDriveModule, WarpDriveDataModule, PerfStatsCallback, CUDACallback, EpisodeReturnLogger,
#: RolloutRenderCallback (see :data:`~warp_drive.training.lightning.binding.CLASSES`)
__all__ = bind_into("lightning", globals())
