"""Train an example env with PyTorch Lightning (one GPU, several GPUs with DDP, or the CPU).

Examples::

    python -m warp_drive.training.lightning.train --env tag_continuous trainer.num_envs=100
    python -m warp_drive.training.lightning.train --env tag_continuous --devices 2 --strategy ddp
    python -m warp_drive.training.lightning.train --env tag_continuous --resume last --tensorboard
    python -m warp_drive.training.lightning.train --env tag_continuous --backend cpu --max-epochs 2

With ``--strategy ddp`` Lightning starts one process per device (it re-runs this command with
``LOCAL_RANK`` set); each builds its own env replicas on its GPU. Overrides are dotted
``key=value`` pairs, as for ``warp_drive.training.example_training_script``
(:mod:`warp_drive.cli.train`); multi-word flags take
either spelling (``--max_epochs`` or ``--max-epochs``). Expected errors print one or two lines and
exit with 2 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Sequence

from warp_drive.cli.common import add_flag, add_run_source_arguments, configure_logging, report_errors, without_flag
from warp_drive.cli.envs import example_env_names, resolve_env
from warp_drive.config import load_run_config
from warp_drive.errors import ConfigError
from warp_drive.training.interrupt import IterationAborted, stop_outside_training, signal_name
from warp_drive.training.run.run_failures import RunFailures
from warp_drive.training.run.run_folder import check_writable, default_run_name

logger = logging.getLogger("warp_drive.training.lightning.train")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m warp_drive.training.lightning.train", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_source_arguments(p, env_names=example_env_names())
    p.add_argument("--accelerator", default=None, help="Lightning accelerator (default: gpu for pycuda, cpu for cpu)")
    p.add_argument("--devices", default="1", help="Lightning devices: a count, 'auto' or a list like 0,1")
    p.add_argument("--strategy", default="auto", help="Lightning strategy, e.g. ddp")
    add_flag(p, "--max_epochs", type=int, default=None, help="default: the run config's num_episodes")
    add_flag(p, "--iterations_per_epoch", type=int, default=None,
             help="rollouts per Lightning epoch (default: whole episodes, at least 10)")
    add_flag(p, "--results_dir", default="lightning_runs", help="root of logs, checkpoints and renders")
    p.add_argument("--resume", default=None, help="checkpoint path, or 'last' for the newest last.ckpt")
    p.add_argument("--tensorboard", action="store_true", help="also log to TensorBoard")
    add_flag(p, "--render_every", type=int, default=0, help="render a Tag rollout GIF every N epochs (0: off)")
    add_flag(p, "--returns_every", type=int, default=1, help="log episode returns every N epochs")
    add_flag(p, "--log_every_n_steps", type=int, default=None, help="period of step metrics (default 10)")
    p.add_argument("--summary", action="store_true", help="write rank<r>_summary.json (weights checksum, metrics)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return p.parse_intermixed_args(argv)


def _devices(text: str) -> int | str | list[int]:
    if text == "auto":
        return text
    if "," in text:
        return [int(x) for x in text.split(",") if x]
    return int(text)


def run(args: argparse.Namespace, failures: Any = None, argv: Sequence[str] | None = None) -> int:
    """Builds and fits; ``failures`` (a :class:`~warp_drive.training.run.run_failures.RunFailures`) learns the
    run folder when training starts. Returns 0, or 130 / 143 after a SIGINT / SIGTERM stop."""
    import torch

    from warp_drive.training.run.checkpoint import verify_archive
    from warp_drive.training.distributed import clear_torch_process_group
    from warp_drive.training.lightning import (
        EpisodeReturnLogger,
        ExampleEnvEngineFactory,
        RolloutRenderCallback,
        WarpDriveDataModule,
        WarpDriveModule,
        build_lightning_trainer,
        iterations_per_epoch_for,
    )
    from warp_drive.training.lightning._compat import api_of
    from warp_drive.training.lightning.cli_runs import LightningStop, checkpoint_iteration, run_callback

    if os.environ.get("LOCAL_RANK", "0") == "0":
        check_writable(Path(args.results_dir).resolve())  # before anything is built
    # the env: --env or the config's name, in any form of warp_drive.cli.envs (an example env, an import path, ...)
    env, registrar = resolve_env(args.env or load_run_config(args.config).name, args.env_imports).registrar()
    factory = ExampleEnvEngineFactory(env=env, config=args.config, overrides=args.overrides, backend=args.backend,
                                      results_dir=str(Path(args.results_dir) / "engine" / engine_run_name()),
                                      registrar=registrar)
    module = WarpDriveModule(engine_factory=factory, iterations_per_epoch=args.iterations_per_epoch)
    max_epochs = args.max_epochs
    if max_epochs is None:
        cfg = factory.run_config()
        episode_length = int(dict(cfg.env).get("episode_length", 0) or 0)
        if not episode_length:
            raise ConfigError("pass --max_epochs (the run config's env section has no episode_length)")
        iters = cfg.trainer.num_iterations(episode_length)
        ipe = args.iterations_per_epoch or iterations_per_epoch_for(episode_length, cfg.trainer.batch_size_per_env)
        max_epochs = max(1, math.ceil(iters / ipe))
    stop = LightningStop()
    run_folder = Path(args.results_dir).resolve()
    callbacks: list[Any] = [
        run_callback(api_of(module), stop, estimate=factory.resolved_backend == "cpu",
                     on_start=(lambda: failures.started(run_folder)) if failures is not None else None),
        EpisodeReturnLogger(every_n_epochs=args.returns_every)]
    if args.render_every > 0:
        callbacks.append(RolloutRenderCallback(every_n_epochs=args.render_every))
    trainer = build_lightning_trainer(
        module, max_epochs=max_epochs, accelerator=args.accelerator, devices=_devices(args.devices),
        strategy=args.strategy, default_root_dir=args.results_dir,
        loggers=["csv", "tensorboard"] if args.tensorboard else ["csv"], callbacks=callbacks,
        enable_progress_bar=not args.quiet, log_every_n_steps=args.log_every_n_steps)
    ckpt_path = args.resume
    if ckpt_path == "last":
        found = sorted(Path(args.results_dir).rglob("last.ckpt"), key=lambda p: p.stat().st_mtime)
        ckpt_path = str(found[-1]) if found else None
    if ckpt_path is not None:  # corrupt or cut-off files are refused by name before Lightning unpickles anything
        verify_archive(Path(ckpt_path), "Lightning checkpoint")
    # weights_only=True whatever TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD says: a checkpoint holding other objects is refused
    discarded = False
    with stop:  # SIGINT/SIGTERM: stop at the next iteration boundary (or env step: slow iterations) with last.ckpt
        try:
            trainer.fit(module, datamodule=WarpDriveDataModule(module), ckpt_path=ckpt_path, weights_only=True)
        except IterationAborted:  # inside a slow iteration: discarded; last.ckpt holds the boundary it started from
            discarded = True
    engine = module.engine
    if stop.signum is not None:
        last = getattr(trainer.checkpoint_callback, "last_model_path", "") or None
        if trainer.is_global_zero:
            done = checkpoint_iteration(Path(last)) if last else 0
            inside = f" (iteration {(done or 0) + 1}, in progress, was discarded)" if discarded else ""
            print(f"{signal_name(stop.signum)}: stopped after iteration {done}{inside}; "
                  f"checkpoint {last}\ncontinue with: {resume_command(argv, last)}", flush=True)
        clear_torch_process_group()
        return stop.exit_code
    log_dir = trainer.log_dir  # a collective under DDP: every rank asks
    if args.summary and engine is not None:
        checksum = sum(float(p.detach().double().sum()) for p in module.policy_models.parameters())
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if torch.is_tensor(v) and v.numel() == 1}
        summary = {"rank": trainer.global_rank, "world_size": trainer.world_size, "iteration": engine.iteration,
                   "sampler_seed": int(engine.sampler.seed or 0), "weights_checksum": checksum, "metrics": metrics,
                   "log_dir": log_dir}
        out = Path(args.results_dir) / f"rank{trainer.global_rank}_summary.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(summary, indent=2))
    if trainer.is_global_zero:
        logger.info("trained %d iterations; logs and checkpoints under %s", engine.iteration if engine else 0,
                    log_dir or args.results_dir)
    # leave the process group before the interpreter exits: a gloo group still alive at exit can
    # abort the process (std::terminate from its threads: exit code 134)
    clear_torch_process_group()
    return 0


PROG = "python -m warp_drive.training.lightning.train"


def engine_run_name() -> str:
    """The engine's own folder name under ``<results_dir>/engine``: unique per run
    (:func:`~warp_drive.training.run.run_folder.default_run_name`), the same on every DDP rank (rank 0
    chooses it before Lightning starts the other ranks, which inherit it through the environment)."""
    name = os.environ.get(_ENGINE_RUN_ENV) if os.environ.get("LOCAL_RANK", "0") != "0" else None
    if not name:  # rank 0 (or no DDP): a fresh name on every run, also for runs in one process
        name = default_run_name()
        os.environ[_ENGINE_RUN_ENV] = name
    return name


_ENGINE_RUN_ENV = "WARP_DRIVE_LIGHTNING_ENGINE_RUN"


def resume_command(argv: Sequence[str] | None, checkpoint: str | Path | None) -> str:
    """This command line with ``--resume CHECKPOINT`` (or ``--resume last``) instead of its own ``--resume``."""
    args = without_flag(sys.argv[1:] if argv is None else list(argv), ("--resume",))
    return shlex.join([*PROG.split(), *args, "--resume", str(checkpoint or "last")])


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: docs/config_reference.md, "Exit codes" (:mod:`warp_drive.training.run.run_failures`)."""
    with stop_outside_training():  # SIGTERM outside training: exit 143 with a message
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    from warp_drive.training.lightning.cli_runs import newest_intact_lightning_checkpoint

    args = parse_args(argv)
    configure_logging(args.quiet)

    def resume(folder: Path) -> str:
        intact = newest_intact_lightning_checkpoint(folder)
        return resume_command(argv, intact[0] if intact else None)

    failures = RunFailures(resume, args.debug, Path(args.results_dir).resolve() if args.resume else None,
                           find_intact=newest_intact_lightning_checkpoint)

    return report_errors(lambda: failures.call(lambda: run(args, failures, argv)), args.debug)


if __name__ == "__main__":
    sys.exit(main())
