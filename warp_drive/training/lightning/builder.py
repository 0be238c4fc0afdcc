"""``build_lightning_trainer``: a Lightning Trainer configured for WarpDrive modules (of either distribution)."""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warp_drive.vocab.backends import uses_gpu
from warp_drive.errors import ConfigError
from warp_drive.training.lightning._compat import LightningAPI, api_of, lightning_api
from warp_drive.training.lightning.callbacks import PerfStatsCallbackBase
from warp_drive.training.lightning.module import WarpDriveModuleBase

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


def _accelerator_for(module: WarpDriveModuleBase | None) -> str:
    if module is None:
        return "auto"
    if module.engine is not None:
        return "gpu" if str(module.engine.device).startswith("cuda") else "cpu"
    backend = getattr(module.engine_factory, "resolved_backend", None)
    if backend is not None:
        return "gpu" if uses_gpu(backend) else "cpu"
    return "auto"


def _make_loggers(loggers: Any, root: str | None, api: LightningAPI) -> Any:
    if loggers is None or loggers is False:
        return False
    if loggers is True:
        loggers = ("csv",)
    if isinstance(loggers, (str, api.Logger)):
        loggers = [loggers]
    out = []
    save_dir = root if root is not None else "."
    for item in loggers:
        if isinstance(item, api.Logger):
            out.append(item)
        elif item == "csv":
            out.append(api.CSVLogger(save_dir=save_dir, name="csv"))
        elif item in ("tensorboard", "tb"):
            out.append(api.TensorBoardLogger(save_dir=save_dir, name="tensorboard"))
        else:
            raise ConfigError(f"unknown logger {item!r}; use 'csv', 'tensorboard' or a lightning Logger instance")
    return out


def build_lightning_trainer(
    module: WarpDriveModuleBase | None = None,
    *,
    max_epochs: int | None = None,
    accelerator: str | None = None,
    devices: int | str | Sequence[int] | None = None,
    strategy: Any = "auto",
    default_root_dir: str | Path | None = None,
    loggers: Any = ("csv",),
    checkpoint: Any = True,
    checkpoint_every_n_epochs: int = 1,
    perf_stats: bool = True,
    callbacks: Sequence[Any] = (),
    enable_progress_bar: bool = True,
    log_every_n_steps: int | None = None,
    **trainer_kwargs: Any,
) -> Any:
    """A Lightning Trainer set up for ``WarpDriveModule`` training.

    The Trainer (and its default callbacks and loggers) come from the distribution of
    ``module``'s class: ``lightning.Trainer`` for a module from :mod:`warp_drive.training.lightning`
    (or no module), ``pytorch_lightning.Trainer`` for one from
    :mod:`warp_drive.training.pytorch_lightning`.

    Defaults follow the module: ``accelerator`` "gpu" for the pycuda backend and "cpu" for the cpu
    backend, the engine's own GPU for a prebuilt engine, ``max_epochs`` covering the run config's
    ``num_episodes`` (``ceil(num_iterations / iterations_per_epoch)``), a CSV logger, a
    :class:`~lightning.pytorch.callbacks.ModelCheckpoint` every epoch (plus ``last.ckpt``) and a
    :class:`PerfStatsCallback`. ``strategy="ddp"`` with several trained policies (or, with a built
    engine, several optimizers: a policy with an actor and a critic) becomes
    ``"ddp_find_unused_parameters_true"`` (each backward uses one optimizer's parameters; the module's
    ``setup`` sets it for an engine built later).
    Gradient clipping comes from the run config (``policy.<tag>.max_grad_norm``), not from
    ``gradient_clip_val``.

    Args:
        module: The module to be fitted (used to pick defaults; may be None).
        max_epochs: Lightning epochs; default from the run config (needs a built engine).
        accelerator, devices, strategy: As for ``lightning.Trainer``.
        default_root_dir: Root of logs and checkpoints (Lightning's default: the working dir).
        loggers: "csv", "tensorboard", Logger instances, a list of those, or False.
        checkpoint: True (default ModelCheckpoint), False, or a ModelCheckpoint (of the same distribution).
        checkpoint_every_n_epochs: Period of the default ModelCheckpoint.
        perf_stats: Add a :class:`PerfStatsCallback`.
        callbacks: More callbacks (of the same distribution).
        enable_progress_bar: Lightning's progress bar (one host sync per refresh).
        log_every_n_steps: Period (in iterations) of the step metrics (losses, KL, gradient norms);
            default 10. Epoch metrics (env steps/s, and episode returns at epochs that close whole
            episodes) are logged at every epoch end regardless.
        **trainer_kwargs: Passed on to the Trainer.

    Raises:
        ConfigError: ``gradient_clip_val`` given; ``max_epochs`` cannot be inferred; unknown logger;
            ``checkpoint`` neither a bool nor a ModelCheckpoint of the module's distribution.
    """
    if trainer_kwargs.get("gradient_clip_val") is not None:
        raise ConfigError("gradient clipping comes from the run config (policy.<tag>.clip_grad_norm / max_grad_norm); "
                          "do not pass gradient_clip_val")
    silence_irrelevant_lightning_warnings()
    api = api_of(module) if module is not None else lightning_api("lightning")
    engine = module.engine if module is not None else None
    ipe = module.iterations_per_epoch if module is not None else None
    if max_epochs is None:
        if engine is None or ipe is None:
            raise ConfigError("pass max_epochs= (it can only be derived from a built engine's run config)")
        max_epochs = max(1, math.ceil(engine.num_iters / ipe))
    if accelerator is None:
        accelerator = _accelerator_for(module)
    if devices is None:  # a built engine's own GPU
        on_gpu = engine is not None and str(engine.device).startswith("cuda")
        devices = [int(getattr(engine.device, "index", None) or 0)] if on_gpu else 1
    if isinstance(strategy, str) and strategy == "ddp":
        # optimizers once the engine exists (else the trained policies; setup() completes the count)
        count = None if module is None else module.num_optimizers or module.num_trained_policies
        if count is None or count > 1:
            strategy = "ddp_find_unused_parameters_true"
    cbs = list(callbacks)
    if checkpoint is True:
        cbs.append(api.ModelCheckpoint(every_n_epochs=checkpoint_every_n_epochs, save_last=True))
    elif isinstance(checkpoint, api.ModelCheckpoint):
        cbs.append(checkpoint)
    elif checkpoint is not False:
        raise ConfigError(f"checkpoint={checkpoint!r}: use True, False or a {api.distribution} ModelCheckpoint")
    if perf_stats and not any(isinstance(c, PerfStatsCallbackBase) for c in cbs):
        bound = importlib.import_module(f"warp_drive.training.lightning.{api.distribution}_classes")
        cbs.append(bound.PerfStatsCallback())
    root = str(default_root_dir) if default_root_dir is not None else None
    kwargs: dict[str, Any] = {
        "max_epochs": max_epochs,
        "accelerator": accelerator,
        "devices": devices,
        "strategy": strategy,
        "logger": _make_loggers(loggers, root, api),
        "callbacks": cbs,
        "enable_checkpointing": bool(checkpoint),
        "enable_progress_bar": enable_progress_bar,
        "log_every_n_steps": log_every_n_steps if log_every_n_steps is not None else 10,
        "use_distributed_sampler": False,
        "num_sanity_val_steps": 0,
        "default_root_dir": root,
    }
    kwargs.update(trainer_kwargs)
    return api.Trainer(**kwargs)
