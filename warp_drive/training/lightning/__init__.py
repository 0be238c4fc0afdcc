"""PyTorch Lightning 2.x integration: WarpDrive training as a LightningModule.

Needs ``pip install 'warpdrive-marl[lightning]'``. Single GPU::

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

from warp_drive.training.lightning.builder import (
    build_lightning_trainer,
    silence_irrelevant_lightning_warnings,
)
from warp_drive.training.lightning.callbacks import (
    EpisodeReturnLogger,
    PerfStatsCallback,
    RolloutRenderCallback,
    numpy_policy,
)
from warp_drive.training.lightning.data import (
    RolloutDataset,
    default_iterations_per_epoch,
    iterations_per_epoch_for,
    make_policy_batches,
    passthrough_collate,
    rollout_dataloader,
)
from warp_drive.training.lightning.datamodule import WarpDriveDataModule
from warp_drive.training.lightning.engine import EngineFactory, ExampleEnvEngineFactory
from warp_drive.training.lightning.module import CHECKPOINT_KEY, WarpDriveModule

__all__ = [
    "CHECKPOINT_KEY",
    "EngineFactory",
    "EpisodeReturnLogger",
    "ExampleEnvEngineFactory",
    "PerfStatsCallback",
    "RolloutDataset",
    "RolloutRenderCallback",
    "WarpDriveDataModule",
    "WarpDriveModule",
    "build_lightning_trainer",
    "default_iterations_per_epoch",
    "iterations_per_epoch_for",
    "make_policy_batches",
    "numpy_policy",
    "passthrough_collate",
    "rollout_dataloader",
    "silence_irrelevant_lightning_warnings",
]
