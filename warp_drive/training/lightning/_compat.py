"""The one place that imports PyTorch Lightning, from either of its two distributions.

PyTorch Lightning 2.x ships the same code under two package names: ``lightning`` (import path
``lightning.pytorch``) and ``pytorch_lightning``. A Trainer of one accepts only modules and
callbacks derived from its own classes. The implementation classes of this package are therefore
plain mixins that import no Lightning at all; :mod:`~warp_drive.training.lightning.lightning_classes`
binds them to ``lightning`` and :mod:`~warp_drive.training.lightning.pytorch_lightning_classes`
to ``pytorch_lightning``. :func:`lightning_api` returns the few Lightning names the implementation
uses, from one distribution, imported on first use.
"""

from __future__ import annotations

import functools
import importlib
import sys
from dataclasses import dataclass
from typing import Any

from warp_drive.errors import ConfigError

#: The distributions that can host the classes of this package.
DISTRIBUTIONS = ("lightning", "pytorch_lightning")


@dataclass(frozen=True)
class LightningAPI:
    """The Lightning names used here, taken from one distribution (``distribution``)."""

    distribution: str
    LightningModule: type
    LightningDataModule: type
    Callback: type
    Trainer: type
    ModelCheckpoint: type
    Logger: type
    CSVLogger: type
    TensorBoardLogger: type


@functools.lru_cache(maxsize=None)
def lightning_api(distribution: str = "lightning") -> LightningAPI:
    """Lightning's classes from ``distribution`` ("lightning" or "pytorch_lightning").

    Raises:
        ConfigError: Unknown distribution name.
        ImportError: The distribution is not installed (the message says how to install it).
    """
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(f"unknown Lightning distribution {distribution!r}; use one of {DISTRIBUTIONS}")
    package = "lightning.pytorch" if distribution == "lightning" else distribution
    try:
        root = importlib.import_module(distribution)
        callbacks = importlib.import_module(f"{package}.callbacks")
        loggers = importlib.import_module(f"{package}.loggers")
    except ImportError as err:
        raise ImportError(
            f"this part of warp_drive needs PyTorch Lightning 2.x from the '{distribution}' package: "
            f"pip install '{distribution}>=2.0' (or, from a clone of warp_drive, pip install -e '.[lightning]'); "
            f"the import failed with: {err}"
        ) from err
    return LightningAPI(distribution, root.LightningModule, root.LightningDataModule, root.Callback, root.Trainer,
                        callbacks.ModelCheckpoint, loggers.Logger, loggers.CSVLogger, loggers.TensorBoardLogger)


def api_of(obj: Any, default: str = "lightning") -> LightningAPI:
    """The API of the (already imported) distribution whose Lightning classes ``obj`` derives from, else ``default``."""
    for name in DISTRIBUTIONS:
        root = sys.modules.get(name)
        if root is None:
            continue
        bases = tuple(getattr(root, attr) for attr in ("LightningModule", "Callback", "LightningDataModule", "Trainer")
                      if hasattr(root, attr))
        if bases and isinstance(obj, bases):
            return lightning_api(name)
    return lightning_api(default)


__all__ = ["DISTRIBUTIONS", "LightningAPI", "api_of", "lightning_api"]
