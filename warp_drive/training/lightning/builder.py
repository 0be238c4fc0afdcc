"""``build_lightning_trainer``: a Lightning Trainer configured for WarpDrive modules."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warp_drive.errors import ConfigError
from warp_drive.training.lightning._compat import (
    CSVLogger,
    L,
    Logger,
    ModelCheckpoint,
    TensorBoardLogger,
)
from warp_drive.training.lightning.callbacks import PerfStatsCallback
from warp_drive.training.lightning.module import WarpDriveModule

#: Lightning warnings that do not apply to on-device rollouts (the data is produced on the
#: device by this process: no workers; the dataset's length is exact).
_IRRELEVANT_WARNINGS = (
    r".*does not have many workers.*",
    r".*IterableDataset.*has `__len__` defined.*",
    r".*The number of training batches \(\d+\) is smaller than the logging interval.*",
)


def silence_irrelevant_lightning_warnings() -> None:
    """Filter the Lightning warnings that rollout data loaders always trigger."""
    for pattern in _IRRELEVANT_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)


def _accelerator_for(module: WarpDriveModule | None) -> str:
    if module is None:
        return "auto"
    if module.engine is not None:
        return "gpu" if str(module.engine.device).startswith("cuda") else "cpu"
    backend = getattr(module.engine_factory, "resolved_backend", None)
    if backend is not None:
        return "gpu" if backend == "pycuda" else "cpu"
    return "auto"


def _make_loggers(loggers: Any, root: str | None) -> Any:
    if loggers is None or loggers is False:
        return False
    if loggers is True:
        loggers = ("csv",)
    if isinstance(loggers, (str, Logger)):
        loggers = [loggers]
    out = []
    save_dir = root if root is not None else "."
    for item in loggers:
        if isinstance(item, Logger):
            out.append(item)
        elif item == "csv":
            out.append(CSVLogger(save_dir=save_dir, name="csv"))
        elif item in ("tensorboard", "tb"):
            out.append(TensorBoardLogger(save_dir=save_dir, name="tensorboard"))
        else:
            raise ConfigError(f"unknown logger {item!r}; use 'csv', 'tensorboard' or a lightning Logger instance")
    return out


def build_lightning_trainer(
    module: WarpDriveModule | None = None,
    *,
    max_epochs: int | None = None,
    accelerator: str | None = None,
    devices: int | str | Sequence[int] | None = None,
    strategy: Any = "auto",
    default_root_dir: str | Path | None = None,
    loggers: Any = ("csv",),
    checkpoint: bool | ModelCheckpoint = True,
    checkpoint_every_n_epochs: int = 1,
    perf_stats: bool = True,
    callbacks: Sequence[L.Callback] = (),
    enable_progress_bar: bool = True,
    log_every_n_steps: int | None = None,
    **trainer_kwargs: Any,
) -> L.Trainer:
    """A :class:`lightning.Trainer` set up for :class:`WarpDriveModule` training.

    Defaults follow the module: ``accelerator`` "gpu" for the pycuda backend and "cpu" for the cpu
    backend, the engine's own GPU for a prebuilt engine, ``max_epochs`` covering the run config's
    ``num_episodes`` (``ceil(num_iterations / iterations_per_epoch)``), a CSV logger, a
    :class:`~lightning.pytorch.callbacks.ModelCheckpoint` every epoch (plus ``last.ckpt``) and a
    :class:`PerfStatsCallback`. ``strategy="ddp"`` with several trained policies becomes
    ``"ddp_find_unused_parameters_true"`` (each backward uses one policy's parameters).
    Gradient clipping comes from the run config (``policy.<tag>.max_grad_norm``), not from
    ``gradient_clip_val``.

    Args:
        module: The module to be fitted (used to pick defaults; may be None).
        max_epochs: Lightning epochs; default from the run config (needs a built engine).
        accelerator, devices, strategy: As for ``lightning.Trainer``.
        default_root_dir: Root of logs and checkpoints (Lightning's default: the working dir).
        loggers: "csv", "tensorboard", Logger instances, a list of those, or False.
        checkpoint: True (default ModelCheckpoint), False, or a ModelCheckpoint.
        checkpoint_every_n_epochs: Period of the default ModelCheckpoint.
        perf_stats: Add a :class:`PerfStatsCallback`.
        callbacks: More callbacks.
        enable_progress_bar: Lightning's progress bar (one host sync per refresh).
        log_every_n_steps: Period (in iterations) of the step metrics (losses, KL, gradient norms);
            default 10. Epoch metrics (episode returns, env steps/s)
            are logged every epoch regardless.
        **trainer_kwargs: Passed on to ``lightning.Trainer``.

    Raises:
        ConfigError: ``gradient_clip_val`` given; ``max_epochs`` cannot be inferred; unknown logger.
    """
    if trainer_kwargs.get("gradient_clip_val") is not None:
        raise ConfigError("gradient clipping comes from the run config (policy.<tag>.clip_grad_norm / max_grad_norm); "
                          "do not pass gradient_clip_val")
    silence_irrelevant_lightning_warnings()
    engine = module.engine if module is not None else None
    ipe = module.iterations_per_epoch if module is not None else None
    if max_epochs is None:
        if engine is None or ipe is None:
            raise ConfigError("pass max_epochs= (it can only be derived from a built engine's run config)")
        max_epochs = max(1, math.ceil(engine.num_iters / ipe))
    if accelerator is None:
        accelerator = _accelerator_for(module)
    if devices is None:
        if engine is not None and str(engine.device).startswith("cuda"):
            index = getattr(engine.device, "index", None)
            devices = [int(index or 0)]
        else:
            devices = 1
    if isinstance(strategy, str) and strategy == "ddp":
        trained = module.num_trained_policies if module is not None else None
        if trained is None or trained > 1:
            strategy = "ddp_find_unused_parameters_true"
    cbs = list(callbacks)
    if checkpoint is True:
        cbs.append(ModelCheckpoint(every_n_epochs=checkpoint_every_n_epochs, save_last=True))
    elif isinstance(checkpoint, ModelCheckpoint):
        cbs.append(checkpoint)
    if perf_stats and not any(isinstance(c, PerfStatsCallback) for c in cbs):
        cbs.append(PerfStatsCallback())
    root = str(default_root_dir) if default_root_dir is not None else None
    kwargs: dict[str, Any] = {
        "max_epochs": max_epochs,
        "accelerator": accelerator,
        "devices": devices,
        "strategy": strategy,
        "logger": _make_loggers(loggers, root),
        "callbacks": cbs,
        "enable_checkpointing": bool(checkpoint),
        "enable_progress_bar": enable_progress_bar,
        "log_every_n_steps": log_every_n_steps if log_every_n_steps is not None else 10,
        "use_distributed_sampler": False,
        "num_sanity_val_steps": 0,
        "default_root_dir": root,
    }
    kwargs.update(trainer_kwargs)
    return L.Trainer(**kwargs)
