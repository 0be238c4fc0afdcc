"""Bind the shared Lightning implementation (mixins) to one Lightning distribution's base classes
(why: :mod:`~warp_drive.training.lightning._compat`). The classes are created once per distribution
and named as if defined in the module that asks for them (so they pickle).
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

#: public class name -> (shared implementation, name of the distribution's base class)
CLASSES = {
    "WarpDriveModule": (WarpDriveModuleBase, "LightningModule"),
    "WarpDriveDataModule": (WarpDriveDataModuleBase, "LightningDataModule"),
    "PerfStatsCallback": (PerfStatsCallbackBase, "Callback"),
    "CUDACallback": (CUDACallbackBase, "Callback"),
    "EpisodeReturnLogger": (EpisodeReturnLoggerBase, "Callback"),
    "RolloutRenderCallback": (RolloutRenderCallbackBase, "Callback"),
}


def bind_into(distribution: str, namespace: dict) -> list[str]:
    """Defines the classes of :data:`CLASSES`, on ``distribution``'s base classes (``"lightning"`` or
    ``"pytorch_lightning"``), in ``namespace`` (a module's ``globals()``, whose ``__name__`` becomes their
    ``__module__``); returns their names, for ``__all__``."""
    api = lightning_api(distribution)
    for name, (impl, base) in CLASSES.items():
        namespace[name] = type(name, (impl, getattr(api, base)),
                               {"__doc__": impl.__doc__, "__module__": namespace["__name__"], "__qualname__": name})
    return sorted(CLASSES)
