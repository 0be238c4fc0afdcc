"""LightningDataModule logic serving on-device rollouts of a module's engine (a mixin; see ``WarpDriveDataModule``)."""

from __future__ import annotations

from torch.utils.data import DataLoader

from warp_drive.errors import ConfigError
from warp_drive.training.engine import Engine
from warp_drive.training.lightning.data import rollout_dataloader
from warp_drive.training.lightning.module import WarpDriveModuleBase
from warp_drive.training.run.trainer import Trainer


class WarpDriveDataModuleBase:
    """Train data: one on-device rollout per batch, ``{tag: {name: device tensor}}``.

    The engine is taken from ``source`` when the train dataloader is requested, i.e. after
    :meth:`WarpDriveModule.setup` has built it on this rank's device (DDP-safe).

    Args:
        source: The :class:`WarpDriveModule` (preferred), an :class:`Engine` or the Trainer holding one.
        iterations_per_epoch: Rollouts per Lightning epoch; default: the module's.
    """

    def __init__(self, source: WarpDriveModuleBase | Engine | Trainer, iterations_per_epoch: int | None = None) -> None:
        super().__init__()
        if iterations_per_epoch is not None and int(iterations_per_epoch) < 1:
            raise ConfigError(f"iterations_per_epoch={iterations_per_epoch} must be >= 1")
        self.source = source
        self.iterations_per_epoch = iterations_per_epoch

    def _engine(self) -> Engine:
        if isinstance(self.source, WarpDriveModuleBase):
            if self.source.engine is None:
                raise ConfigError("the module has no engine yet: fit the module (its setup builds the engine) "
                                  "or call module.ensure_engine() first")
            return self.source.engine
        return self.source.engine if isinstance(self.source, Trainer) else self.source

    def train_dataloader(self) -> DataLoader:
        ipe = self.iterations_per_epoch
        if ipe is None and isinstance(self.source, WarpDriveModuleBase):
            ipe = self.source.iterations_per_epoch
        return rollout_dataloader(self._engine(), ipe)
