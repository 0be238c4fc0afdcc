"""Train from a 2.7.1-style run config: ``setup_trainer_and_train`` and 2.7.1's script command line.

2.7.1 shipped ``warp_drive/training/scripts/example_training_script_pycuda.py`` and its Numba twin
``example_training_script_numba.py``, each with a ``setup_trainer_and_train`` function that its multi-GPU
and auto-scaling helpers call back. Both import paths (and ``warp_drive.training.setup_and_train``) lead
here (see :mod:`warp_drive.compat`): the pycuda script trains on the envs' CUDA C steps
(:func:`setup_trainer_and_train`), the Numba script on their Numba steps
(:func:`setup_trainer_and_train_numba`, :func:`main_numba`).

Command line (2.7.1's flags)::

    python -m warp_drive.training.scripts.example_training_script_pycuda --env tag_continuous
    python -m warp_drive.training.scripts.example_training_script_pycuda -e single_cartpole \\
        --num_gpus 2 --results_dir my_run

``--env`` names a run config shipped in ``warp_drive/training/run_configs/`` (2.7.1's names).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from warp_drive.cli.common import add_flag, configure_logging, report_errors
from warp_drive.cli.envs import env_class_for
from warp_drive.config import RunConfig, load_run_config
from warp_drive.utils.checks import closest_match
from warp_drive.config._yaml import yaml_loads
from warp_drive.vocab.backends import uses_gpu
from warp_drive.errors import ConfigError
from warp_drive.training.run.build import build_trainer
from warp_drive.training.interrupt import TrainingInterrupted, stop_outside_training
from warp_drive.training.run.run_folder import check_writable, default_run_name
from warp_drive.cuda.device import choose_backend

_RUN_CONFIGS = resources.files("warp_drive.training").joinpath("run_configs")

def run_config_names() -> list[str]:
    """Names of the run configs shipped in ``warp_drive/training/run_configs``."""
    return sorted(p.name[: -len(".yaml")] for p in _RUN_CONFIGS.iterdir() if p.name.endswith(".yaml"))


def run_config_path(name: str) -> Path:
    """Path of the shipped run config ``<name>.yaml``.

    Raises:
        ConfigError: no such config (with the known names).
    """
    path = Path(str(_RUN_CONFIGS.joinpath(f"{name}.yaml")))
    if not path.is_file():
        known = run_config_names()
        match = closest_match(name, known)
        raise ConfigError(f"no run config named {name!r}" + (f"; did you mean {match!r}?" if match else "")
                          + f" Shipped: {', '.join(known)}.")
    return path


def setup_trainer_and_train(
    run_configuration: Mapping[str, Any] | Any,
    device_id: int = 0,
    num_devices: int = 1,
    event_messenger: Any = None,
    results_directory: str | None = None,
    verbose: bool = True,
    *,
    backend: str | None = None,
) -> None:
    """Builds the env, the wrapper and the Trainer of a run config, trains, and closes (2.7.1's function).

    Args:
        run_configuration: a run-config dict (2.7.1's YAML layout) or a :class:`RunConfig`; its
            ``name`` selects the example env.
        device_id: GPU (and rank) of this process.
        num_devices: processes training together (models are DDP-wrapped when > 1).
        event_messenger: accepted and unused (2.7.1's compile-once signal between processes; the
            kernel cache here is safe for concurrent processes).
        results_directory: run directory below ``saving.basedir/name/tag`` (absolute: as is).
        verbose: progress and the final throughput line.
        backend: ``"pycuda"``, ``"numba"`` or ``"cpu"``; None: pycuda when pycuda and a GPU are present,
            else the cpu backend (with a notice).
    """
    del event_messenger
    backend = choose_backend(backend)
    raw = run_configuration.to_dict() if isinstance(run_configuration, RunConfig) else run_configuration
    config = load_run_config(raw, [f"trainer.env_backend={backend}"])
    if results_directory is None:  # one process: a unique name; several: one that every device process agrees on
        results_directory = default_run_name() if num_devices == 1 else str(int(time.time()))
    if device_id == 0:  # before anything is built
        from warp_drive.training.run.trainer import run_directory

        check_writable(run_directory(config, results_directory).resolve())
    trainer = build_trainer(config, env_class_for(config.name), backend=backend, rank=device_id, world_size=num_devices,
                            device_id=device_id if uses_gpu(backend) else None, results_dir=results_directory,
                            verbose=verbose)
    start = time.perf_counter()
    try:
        trainer.train()
    finally:
        trainer.graceful_close()
    if verbose and device_id == 0:
        wall = time.perf_counter() - start
        print(f"Training steps/s: {trainer.engine.perf['steps'] / wall:,.0f} ({trainer.engine.iteration} iterations, "
              f"results in {trainer.save_dir})")


def numba_backend_or_cpu() -> str:
    """``"numba"`` where the Numba steps can run (numba-cuda with a GPU visible to torch, or Numba's CUDA
    simulator), else ``"cpu"`` with a logged notice (as the pycuda script falls back without a GPU)."""
    import os

    import torch

    from warp_drive.numba_backend.runtime import numba_installed

    simulator = os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip().lower() not in ("", "0", "false", "no")
    if not numba_installed():
        why = "numba-cuda is not installed (pip install -e '.[numba]')"
    elif simulator or torch.cuda.is_available():
        return "numba"
    else:
        why = "no CUDA device is visible (NUMBA_ENABLE_CUDASIM=1 runs the Numba steps in Numba's CPU simulator)"
    logging.getLogger(__name__).warning("%s: the Numba script runs on the cpu backend (NumPy env steps)", why)
    return "cpu"


def setup_trainer_and_train_numba(
    run_configuration: Mapping[str, Any] | Any,
    device_id: int = 0,
    num_devices: int = 1,
    event_messenger: Any = None,
    results_directory: str | None = None,
    verbose: bool = True,
) -> None:
    """2.7.1's ``example_training_script_numba.setup_trainer_and_train``: :func:`setup_trainer_and_train` on
    the envs' Numba steps (:func:`numba_backend_or_cpu`)."""
    setup_trainer_and_train(run_configuration, device_id, num_devices, event_messenger, results_directory, verbose,
                            backend=numba_backend_or_cpu())


def parse_args(argv: Sequence[str] | None = None, prog: str = "example_training_script_pycuda") -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=f"python -m warp_drive.training.scripts.{prog}",
                                description="Train an example env from its 2.7.1-named run config.")
    p.add_argument("--env", "-e", required=True, help=f"run config name: {', '.join(run_config_names())}")
    add_flag(p, "--auto_scale", "-a", action="store_true",
             help="find the num_envs and batch size that fit in GPU memory, then use every visible GPU")
    add_flag(p, "--num_gpus", "-n", type=int, default=-1, help="GPUs to train on (-1: the config's trainer.num_gpus)")
    add_flag(p, "--results_dir", default=None, help="run directory below saving.basedir/name/tag")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, setup: Any = None, prog: str = "example_training_script_pycuda") -> int:
    """2.7.1's script: load ``run_configs/<env>.yaml``, optionally auto-scale, train on one or more GPUs
    (``setup``: the per-process function, default :func:`setup_trainer_and_train`).

    Expected errors print one or two lines and return 2 (``--debug``: the traceback); SIGINT or
    SIGTERM stop at an iteration boundary with a checkpoint and return 130 or 143 (outside training:
    at once, with one line).
    """
    with stop_outside_training():
        return _run_main(argv, setup, prog)


def _run_main(argv: Sequence[str] | None, setup: Any, prog: str) -> int:
    args = parse_args(argv, prog)
    configure_logging(quiet=False)

    def body() -> int:
        try:
            _main(args, setup or setup_trainer_and_train)
        except TrainingInterrupted as stop:
            print(f"stopped after iteration {stop.iteration}; checkpoint {stop.checkpoint}", flush=True)
            return stop.exit_code
        return 0

    return report_errors(body, args.debug)


def main_numba(argv: Sequence[str] | None = None) -> int:
    """2.7.1's ``example_training_script_numba``: :func:`main` on the envs' Numba steps."""
    return main(argv, setup=setup_trainer_and_train_numba, prog="example_training_script_numba")


def _main(args: argparse.Namespace, setup: Any) -> None:
    import torch

    config = yaml_loads(run_config_path(args.env).read_text())
    num_gpus = args.num_gpus
    if args.auto_scale:
        from warp_drive.training.run.auto_scale import perform_auto_vertical_scaling

        config = perform_auto_vertical_scaling(setup, config)
        num_gpus = torch.cuda.device_count()
    if num_gpus == -1:
        num_gpus = int(config.get("trainer", {}).get("num_gpus", 1))
    if num_gpus > 1:
        if num_gpus > torch.cuda.device_count():
            raise ConfigError(f"--num_gpus {num_gpus} but {torch.cuda.device_count()} GPU(s) are visible; "
                              "ask for at most that many")
        from warp_drive.training.distributed import perform_distributed_training

        config.setdefault("trainer", {})["num_gpus"] = num_gpus
        perform_distributed_training(setup, config, args.results_dir)
    else:
        setup(config, results_directory=args.results_dir)


if __name__ == "__main__":
    sys.exit(main())
