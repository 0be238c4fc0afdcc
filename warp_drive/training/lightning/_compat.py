"""The one place that imports PyTorch Lightning, with an install hint when it is missing."""

from __future__ import annotations

try:
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "warp_drive.training.lightning needs PyTorch Lightning 2.x: pip install 'warpdrive-marl[lightning]' "
        f"(or pip install 'lightning>=2.0'); the import failed with: {err}"
    ) from err

__all__ = ["CSVLogger", "L", "Logger", "ModelCheckpoint", "TensorBoardLogger"]
