"""2.7.1 compatibility path: ``warp_drive.training.pytorch_lightning`` (tutorial 7's import).

Re-exports :mod:`warp_drive.training.lightning.pytorch_lightning_classes` (the Lightning
integration bound to the ``pytorch_lightning`` distribution, for ``pytorch_lightning.Trainer``) and
``WarpDriveDataset`` from :mod:`warp_drive.training.lightning.data`.
"""

from warp_drive.training.lightning.data import WarpDriveDataset
from warp_drive.training.lightning.pytorch_lightning_classes import (
    CUDACallback,
    EpisodeReturnLogger,
    PerfStatsCallback,
    RolloutRenderCallback,
    WarpDriveDataModule,
    WarpDriveModule,
)

__all__ = [
    "CUDACallback",
    "EpisodeReturnLogger",
    "PerfStatsCallback",
    "RolloutRenderCallback",
    "WarpDriveDataModule",
    "WarpDriveDataset",
    "WarpDriveModule",
]
