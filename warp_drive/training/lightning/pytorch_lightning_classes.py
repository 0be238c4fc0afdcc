"""The Lightning classes of this package bound to the ``pytorch_lightning`` distribution.

Each class is the shared implementation (a mixin from :mod:`~warp_drive.training.lightning.module`,
:mod:`~warp_drive.training.lightning.callbacks` or :mod:`~warp_drive.training.lightning.datamodule`)
on top of the matching ``pytorch_lightning`` base class, so that ``pytorch_lightning.Trainer`` accepts it;
:mod:`~warp_drive.training.lightning.lightning_classes` binds the same mixins to ``lightning``.
Users import these from warp_drive.training.pytorch_lightning (WarpDrive 2.7.1's import path).
"""

from __future__ import annotations

from warp_drive.training.lightning.binding import bind_into

#: WarpDriveModule, WarpDriveDataModule, PerfStatsCallback, CUDACallback, EpisodeReturnLogger,
#: RolloutRenderCallback (see :data:`~warp_drive.training.lightning.binding.CLASSES`)
__all__ = bind_into("pytorch_lightning", globals())
