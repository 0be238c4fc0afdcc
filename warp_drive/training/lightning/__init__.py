"""PyTorch Lightning 2.x integration: WarpDrive training as a LightningModule.

Needs ``pip install 'lightning>=2.0'`` (from a clone: ``pip install -e '.[lightning]'``). The classes here derive from the ``lightning``
distribution (``lightning.Trainer``); the same classes bound to ``pytorch_lightning`` (for
``pytorch_lightning.Trainer``, as in WarpDrive 2.7.1's tutorial 7) are in
:mod:`warp_drive.training.pytorch_lightning`. Names are imported on first use, so importing this
package imports no Lightning. Single GPU::

    from warp_drive.training.lightning import (
        ExampleEnvEngineFactory, WarpDriveDataModule, WarpDriveModule, build_lightning_trainer)

    factory = ExampleEnvEngineFactory(env="tag_continuous", overrides=["trainer.num_envs=100"])
    module = WarpDriveModule(factory(rank=0, world_size=1, device_id=0))
    trainer = build_lightning_trainer(module, loggers=["csv", "tensorboard"])
    trainer.fit(module, datamodule=WarpDriveDataModule(module))
    trainer.fit(module, datamodule=WarpDriveDataModule(module), ckpt_path="last")  # resume

Several GPUs (one process per GPU, each with its own env replicas)::

    module = WarpDriveModule(engine_factory=factory)
    trainer = build_lightning_trainer(module, devices=2, strategy="ddp", max_epochs=100)
    trainer.fit(module, datamodule=WarpDriveDataModule(module))

or from the command line: ``python -m warp_drive.training.lightning.train --env tag_continuous
--devices 2 --strategy ddp``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> submodule defining it (imported on first access)
_EXPORTS = {
    "CHECKPOINT_KEY": "engine_state",
    "CUDACallback": "lightning_classes",
    "EngineFactory": "engine",
    "EpisodeReturnLogger": "lightning_classes",
    "ExampleEnvEngineFactory": "example_factory",
    "PerfStatsCallback": "lightning_classes",
    "RolloutDataset": "data",
    "RolloutRenderCallback": "lightning_classes",
    "WarpDriveDataModule": "lightning_classes",
    "WarpDriveDataset": "data",
    "WarpDriveModule": "lightning_classes",
    "build_lightning_trainer": "builder",
    "default_iterations_per_epoch": "data",
    "episode_window": "data",
    "iterations_per_epoch_for": "data",
    "numpy_policy": "callbacks",
    "passthrough_collate": "data",
    "rollout_dataloader": "data",
    "silence_irrelevant_lightning_warnings": "builder",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    submodule = _EXPORTS.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
