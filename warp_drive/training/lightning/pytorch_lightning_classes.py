"""The Lightning classes of this package bound to the ``pytorch_lightning`` distribution.

Each class is the shared implementation (a mixin from :mod:`~warp_drive.training.lightning.module`,
:mod:`~warp_drive.training.lightning.callbacks` or :mod:`~warp_drive.training.lightning.datamodule`)
on top of the matching ``pytorch_lightning`` base class, so that ``pytorch_lightning.Trainer`` accepts it;
:mod:`~warp_drive.training.lightning.lightning_classes` binds the same mixins to ``lightning``.
Users import these from warp_drive.training.pytorch_lightning (WarpDrive 2.7.1's import path).
"""

from __future__ import annotations

from warp_drive.training.lightning._compat import lightning_api
from warp_drive.training.lightning.callbacks import (
    CUDACallbackBase,
    EpisodeReturnLoggerBase,
    PerfStatsCallbackBase,
    RolloutRenderCallbackBase,
)
from warp_drive.training.lightning.datamodule import WarpDriveDataModuleBase
from warp_drive.training.lightning.module import WarpDriveModuleBase

_API = lightning_api("pytorch_lightning")


class WarpDriveModule(WarpDriveModuleBase, _API.LightningModule):
    __doc__ = WarpDriveModuleBase.__doc__


class WarpDriveDataModule(WarpDriveDataModuleBase, _API.LightningDataModule):
    __doc__ = WarpDriveDataModuleBase.__doc__


class PerfStatsCallback(PerfStatsCallbackBase, _API.Callback):
    __doc__ = PerfStatsCallbackBase.__doc__


class CUDACallback(CUDACallbackBase, _API.Callback):
    __doc__ = CUDACallbackBase.__doc__


class EpisodeReturnLogger(EpisodeReturnLoggerBase, _API.Callback):
    __doc__ = EpisodeReturnLoggerBase.__doc__


class RolloutRenderCallback(RolloutRenderCallbackBase, _API.Callback):
    __doc__ = RolloutRenderCallbackBase.__doc__


__all__ = [
    "CUDACallback",
    "EpisodeReturnLogger",
    "PerfStatsCallback",
    "RolloutRenderCallback",
    "WarpDriveDataModule",
    "WarpDriveModule",
]
