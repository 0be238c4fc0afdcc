"""Train an example env from its bundled YAML config (or your own), on the GPU or the CPU.

Examples::

    python -m warp_drive.training.example_training_script --env tag_continuous
    python -m warp_drive.training.example_training_script --env cartpole trainer.num_envs=500
    python -m warp_drive.training.example_training_script --config my_run.yaml --backend cpu
    python -m warp_drive.training.example_training_script --env my_pkg.my_env:MyEnv --backend cpu
    python -m warp_drive.training.example_training_script --resume /tmp/tag_continuous/experiments/1700000000
    warp-drive-train --env tag_gridworld --results_dir /tmp/gridworld

Overrides are dotted ``key=value`` pairs (YAML values). Multi-word flags accept both spellings
(``--results_dir`` and ``--results-dir``).

What it prints: the results folder first, then one progress line after the first iteration and
at least every tenth of the run, then a summary with each policy's first and last logged episode
return and the learning summary: the final policy's greedy return against the uniform-random
policy's over fresh start states, each with its 95% Student t interval and episode count, and
whether the trained policy is better (``--eval_episodes N`` sizes it, 0 leaves it out). Without a GPU (the cpu backend) the bundled configs, sized for a GPU, are replaced by
CPU-sized settings (one printed line says which; ``--full_size`` keeps the bundled config).

Ctrl-C (SIGINT) or SIGTERM: the iteration in progress is finished, a checkpoint written, and the
script exits with 130 or 143; ``--resume RUN_FOLDER`` continues in the same folder. Expected
errors (config, checkpoint, env arguments, device) print one or two lines and exit with 2;
``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from warp_drive.cli.common import add_flag, add_run_source_arguments, configure_logging, report_errors, without_flag
from warp_drive.cli.envs import ResolvedEnv, example_env_names, resolve_env
from warp_drive.utils import checks as chk
from warp_drive.config import load_run_config
from warp_drive.config.schema import SavingConfig
from warp_drive.config.load import load_raw_config
from warp_drive.vocab.backends import canonical_backend, uses_gpu
from warp_drive.errors import CheckpointError, ConfigError
from warp_drive.training.run.build import build_trainer
from warp_drive.training.interrupt import TrainingInterrupted, stop_outside_training, signal_name
from warp_drive.training.run.run_failures import RunFailures, resume_folder
from warp_drive.training.run.run_folder import check_writable, claim_run_folder, default_run_name, release_if_empty, run_base
from warp_drive.cuda.device import backend_choice, choose_backend

logger = logging.getLogger("warp_drive.training.example_training_script")

#: Episodes (in total over the env replicas) of ``--evaluate`` and the learning summary: twice
#: ``Trainer.evaluate``'s default, so that the CPU-sized Tag taggers' gain over random shows.
DEFAULT_EVAL_EPISODES = 200
#: Most episodes ``--eval_episodes`` may ask for (the evaluation keeps every episode's return).
MAX_EVAL_EPISODES = 100_000

PROG = "python -m warp_drive.training.example_training_script"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_source_arguments(p, required=False, env_names=example_env_names())
    add_flag(p, "--results_dir", default=None,
             help="run folder, relative to the current one (default: saving.basedir/name/tag/<unix time>.<us>-<pid>-<random>); "
                  "one that holds a run needs --resume")
    p.add_argument("--resume", default=None,
                   help="run folder (its newest intact checkpoint) or checkpoint file to continue from; the run "
                        "continues in that folder. Without --env/--config the checkpoint's config is used")
    add_flag(p, "--num_gpus", "-n", type=int, default=None, help="processes/GPUs (torchrun is used for > 1)")
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard scalars")
    p.add_argument("--evaluate", action="store_true",
                   help="only evaluate the loaded weights: greedy return against the uniform-random policy's over "
                        "fresh start states, mean ± 95%% Student t interval over episodes (see --eval_episodes)")
    add_flag(p, "--eval_episodes", type=int, default=DEFAULT_EVAL_EPISODES, metavar="N",
             help="episodes in total, spread over the env replicas, that --evaluate and the end-of-run learning "
                  "summary play per policy, for the trained and for the random policy each "
                  f"(default {DEFAULT_EVAL_EPISODES}; 0 leaves the summary's evaluation out)")
    add_flag(p, "--auto_scale", "-a", action="store_true",
             help="find the num_envs and batch size per env that fit in GPU memory and run fastest, then train")
    add_flag(p, "--full_size", action="store_true",
             help="on the cpu backend, train the bundled (GPU-sized) config as is instead of CPU-sized settings")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    args = p.parse_intermixed_args(argv)  # overrides may come before or after the flags
    if not (args.env or args.config or args.resume):
        p.error("one of --env, --config or --resume is required")
    if args.eval_episodes < 0 or (args.evaluate and args.eval_episodes < 1) or args.eval_episodes > MAX_EVAL_EPISODES:
        p.error(f"--eval_episodes {args.eval_episodes}: use an episode count from 1 to {MAX_EVAL_EPISODES:,} (or 0 to "
                "leave the end-of-run evaluation out of a training run)")
    if args.num_gpus is not None and args.num_gpus < 1:
        p.error(f"--num_gpus {args.num_gpus}: use a process count >= 1 (or leave it out for one)")
    if args.results_dir is not None and not args.results_dir.strip():
        p.error("--results_dir '': name a folder (or leave --results_dir out for a fresh default one)")
    return args


# ----------------------------------------------------------------------------- planning (no torch yet)
@dataclass
class RunPlan:
    """What a command line resolves to before anything is built."""

    config: Any  # RunConfig
    run_dir: Path
    backend: str
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    checkpoint: Path | None = None
    checkpoint_state: dict | None = None
    notes: list[str] = field(default_factory=list)
    env: ResolvedEnv | None = None  # the env class and where it came from (warp_drive.cli.envs)


def results_folder_for(args: argparse.Namespace, raw_config: dict | None) -> tuple[Path, bool]:
    """The run folder and whether its name is a default one: ``--resume``'s folder, ``--results_dir``
    (relative to the cwd), or ``saving.basedir/name/tag/<unix time>.<microseconds>-<pid>-<random>``
    (:mod:`warp_drive.training.run.run_folder`)."""
    if args.resume:
        resume = Path(chk.as_path(args.resume, "--resume")).expanduser().resolve()
        if not resume.exists():
            raise CheckpointError(f"cannot resume from {args.resume}: no such file or folder; pass a run folder "
                                  "(or a checkpoint_<iteration>.pt in it) that a previous run wrote")
        folder = resume if resume.is_dir() else resume.parent
        if args.results_dir and Path(args.results_dir).expanduser().resolve() != folder:
            raise ConfigError(f"--resume continues in the checkpoint's run folder {folder}; drop --results_dir "
                              f"{args.results_dir} (or copy the run folder there and resume from the copy)")
        return folder, False
    if args.results_dir:
        return Path(chk.as_path(args.results_dir, "--results_dir")).expanduser().resolve(), False
    sv = SavingConfig.from_dict((raw_config or {}).get("saving"))
    return (run_base(sv.basedir, sv.name, sv.tag) / default_run_name()).resolve(), True


def _config_source(args: argparse.Namespace, env: ResolvedEnv | None = None) -> Any:
    if not args.env:
        return args.config
    return (env or resolve_env(args.env, getattr(args, "env_imports", None))).run_config_path()


def plan_run(args: argparse.Namespace, announce: bool = True) -> RunPlan:
    """Resolves config, run folder, backend and checkpoint; checks the run folder first (no torch import
    before that check, so a bad folder fails in well under a second) and prints it (``announce``)."""
    rank = int(os.environ.get("RANK", "0"))
    imports = getattr(args, "env_imports", None)
    env = resolve_env(args.env, imports) if args.env else None  # before any folder is made or printed
    source = _config_source(args, env)
    raw = load_raw_config(source, list(args.overrides)) if source is not None else None  # validated below
    config_numba = _check_config_backend(raw)  # --backend replaces it below: a bad value would pass unnoticed
    run_dir, default_name = results_folder_for(args, raw)
    if rank == 0:
        check_writable(run_dir)  # creates nothing: the folder is claimed once the config is valid
    backend, note = backend_choice(args.backend or config_numba)
    notes = [note] if note else []
    from warp_drive.training.distributed import init_from_env

    ctx = init_from_env(backend)
    checkpoint = state = None
    if args.resume:
        from warp_drive.training.run.checkpoint import resolve_checkpoint

        checkpoint, state = resolve_checkpoint(args.resume)
        if source is None:
            source = state["config"]
    cpu_sized = _cpu_sized_overrides(args, backend, env)
    if cpu_sized:  # torch's threads: warp_drive.utils.cpu_threads, when the env wrapper is built
        notes.append(f"cpu backend: CPU-sized settings for {args.env} ({env.cpu_sized.summary}"  # type: ignore[union-attr]
                     "); --full_size trains the bundled GPU-sized config")
    config = load_run_config(source, [*cpu_sized, *args.overrides, f"trainer.env_backend={backend}"])
    env = env or resolve_env(config.name, imports)  # a --config or --resume run: the config's name
    if state is not None:
        _check_resume(state, config, checkpoint, bool(cpu_sized))
    if args.evaluate and state is None and not any(map(_has_weights_file, config.policy.values())):
        raise ConfigError(f"--evaluate scores trained weights, and none are given; add --resume RUN_FOLDER (a run "
                          "folder that training wrote) or set policy.<tag>.model.model_ckpt_filepath")
    if rank == 0:
        run_dir = claim_run_folder(run_dir, default_name=default_name, resume=bool(args.resume))
        try:
            if announce:
                print(f"results: {run_dir}", flush=True)
            return RunPlan(config, run_dir, backend, ctx.rank, ctx.world_size, ctx.local_rank, checkpoint, state,
                           notes, env)
        except BaseException:  # a signal between the claim and the plan's return: nothing to keep
            release_if_empty(run_dir)
            raise
    return RunPlan(config, run_dir, backend, ctx.rank, ctx.world_size, ctx.local_rank, checkpoint, state, notes, env)


def _has_weights_file(policy: Any) -> bool:
    """Whether a policy section names a weights file (DDPG's and SAC's name one per network)."""
    files = policy.model.model_ckpt_filepath
    return any(files.values()) if isinstance(files, dict) else bool(files)


def _check_config_backend(raw: Any) -> str | None:
    """The config's own ``trainer.env_backend`` (file and overrides), if set, must be a backend name.
    Returns ``"numba"`` when it names the numba backend (an explicit choice of the envs' Numba steps, kept
    when ``--backend`` is not given), else None (pycuda or cpu: ``--backend`` or the machine decides)."""
    trainer = raw.get("trainer") if isinstance(raw, dict) else None
    if isinstance(trainer, dict) and "env_backend" in trainer:
        name = canonical_backend(trainer["env_backend"], "`trainer.env_backend` in the run config (--backend picks this run's)")
        return name if name == "numba" else None
    return None


def _cpu_sized_overrides(args: argparse.Namespace, backend: str, env: ResolvedEnv | None) -> list[str]:
    """An ``--env`` run's CPU-sized settings on the cpu backend: the env's own ``cpu_sized.yaml``."""
    if backend != "cpu" or args.full_size or not args.env or env is None or env.cpu_sized is None:
        return []
    return list(env.cpu_sized.overrides)


def _check_resume(state: dict, config: Any, checkpoint: Path, cpu_sized: bool) -> None:
    from warp_drive.training.run.checkpoint import check_resume_compatible

    try:
        check_resume_compatible(state, config, checkpoint)
    except CheckpointError as err:
        if not cpu_sized:
            raise
        raise CheckpointError(f"{err} (this run got CPU-sized settings; --full_size uses the bundled config)") from err


# ----------------------------------------------------------------------------- building
def build(args: argparse.Namespace, plan: RunPlan | None = None) -> Any:
    """Config, env, wrapper and trainer from the command line (one rank under torchrun)."""
    plan = plan or plan_run(args, announce=False)
    config = plan.config
    run_dir = _same_on_every_rank(plan.run_dir, plan.world_size)
    env_class = (plan.env or resolve_env(args.env or config.name, getattr(args, "env_imports", None))).env_class
    if plan.backend == "cpu":  # no GPU kernels in this process: the optimizers' Dynamo import skips Triton (73 MB)
        from warp_drive.utils.lean_imports import import_dynamo_without_triton

        import_dynamo_without_triton()
    trainer = build_trainer(config, env_class, backend=plan.backend, rank=plan.rank,
                            world_size=plan.world_size,
                            device_id=plan.local_rank if uses_gpu(plan.backend) and plan.world_size > 1 else None,
                            results_dir=run_dir, verbose=not args.quiet and plan.rank == 0, tensorboard=args.tensorboard)
    if plan.checkpoint is not None:
        trainer.load_checkpoint(plan.checkpoint, plan.checkpoint_state)
    return trainer


def _same_on_every_rank(run_dir: Path, world_size: int) -> Path:
    """Rank 0's run folder (ranks may differ in the default folder's time stamp)."""
    if world_size <= 1:
        return run_dir
    import torch.distributed as dist

    box = [str(run_dir)]
    dist.broadcast_object_list(box, src=0)
    return Path(box[0])


def auto_scale_overrides(args: argparse.Namespace) -> list[str]:
    """Search num_envs and steps per env on the GPU; return the overrides to train with."""
    import gc

    import torch

    from warp_drive.training.run.auto_scale import gpu_free_bytes, search

    if choose_backend(args.backend) != "pycuda":
        raise ConfigError("--auto_scale sizes runs for GPU memory; it needs the pycuda backend and a GPU")
    base = load_run_config(_config_source(args), list(args.overrides))

    def trial(envs: int, steps: int) -> tuple[float, int]:
        trial_args = argparse.Namespace(**{**vars(args), "resume": None, "quiet": True, "results_dir": None,
                                           "overrides": [*args.overrides, "saving.basedir=/tmp/warp_drive_auto_scale",
                                                         f"trainer.num_envs={envs}",
                                                         f"trainer.train_batch_size={envs * steps}",
                                                         "trainer.num_episodes=100000000", "saving.metrics_log_freq=100000000",
                                                         "saving.model_params_save_freq=100000000",
                                                         "saving.checkpoint_every_seconds=0"]})
        torch.cuda.reset_peak_memory_stats()
        trainer = None
        try:
            trainer = build(trial_args)
            trainer.train(1)
            torch.cuda.synchronize()
            start = time.perf_counter()
            trainer.train(2)
            torch.cuda.synchronize()
            rate = 2 * envs * steps / (time.perf_counter() - start)
            return rate, int(torch.cuda.max_memory_allocated())
        finally:
            del trainer
            gc.collect()
            torch.cuda.empty_cache()

    choice = search(trial, gpu_free_bytes(), base.trainer.num_envs, base.trainer.batch_size_per_env)
    print(choice.table())
    return [f"trainer.num_envs={choice.num_envs}", f"trainer.train_batch_size={choice.train_batch_size}"]


# ----------------------------------------------------------------------------- running
def run(args: argparse.Namespace, failures: Any = None) -> int:
    """Plans, builds and trains; ``failures`` (a :class:`~warp_drive.training.run.run_failures.RunFailures`)
    learns the run folder once training starts."""
    if args.auto_scale:
        args.overrides = [*args.overrides, *auto_scale_overrides(args)]
    plan = plan_run(args)
    try:
        return _run_plan(args, plan, failures)
    except BaseException as err:  # a failed build, or a signal before training started
        # once training started, the folder keeps the error's log; a signal writes none (a stop before the
        # first iteration, e.g. during the probe, leaves the folder empty)
        if not getattr(failures, "training", False) or isinstance(err, KeyboardInterrupt):
            release_if_empty(plan.run_dir)  # the claimed folder, if still empty
        raise


def _run_plan(args: argparse.Namespace, plan: RunPlan, failures: Any) -> int:
    if plan.rank == 0:
        for note in plan.notes:
            print(note, flush=True)
    trainer = build(args, plan)
    from warp_drive.training.run.long_runs import log_estimate, probe_iteration_seconds
    from warp_drive.training.run.run_summary import print_finished, print_random_comparison, print_summary

    if plan.checkpoint is not None and plan.rank == 0:
        print(f"resumed from {plan.checkpoint} at iteration {trainer.engine.iteration} of {trainer.num_iters}", flush=True)
    if args.evaluate:
        if plan.rank == 0:
            print_random_comparison(trainer, args.eval_episodes)
        return 0
    if trainer.engine.iteration >= trainer.num_iters:  # a finished run: its evaluation, no training
        trainer.graceful_close()
        if plan.rank == 0:
            print_finished(trainer, args.eval_episodes)
        return 0
    if failures is not None:
        failures.started(plan.run_dir)
    if plan.backend == "cpu" and plan.world_size == 1 and not _cpu_sized_overrides(args, plan.backend, plan.env):
        seconds = trainer.expect_iteration_seconds(probe_iteration_seconds(trainer.engine))  # a GPU-sized config says so
        log_estimate(seconds, trainer.num_iters - trainer.engine.iteration, "from a probe of a few env steps")
    first = trainer.engine.iteration
    start = time.perf_counter()
    try:
        trainer.train()
    except TrainingInterrupted as stop:
        if trainer.rank == 0:
            print(f"{signal_name(stop.signum)}: stopped after iteration {stop.iteration}; checkpoint {stop.checkpoint}\n"
                  f"continue with: {PROG} --resume {trainer.save_dir}", flush=True)
        return stop.exit_code
    finally:
        trainer.graceful_close()
    if trainer.rank == 0:
        print_summary(trainer, first, time.perf_counter() - start, args.eval_episodes)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: docs/config_reference.md, "Exit codes" (:mod:`warp_drive.training.run.run_failures`)."""
    with stop_outside_training():  # SIGTERM from now on: exit 143 with a message (Trainer.train's handlers while it runs)
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    configure_logging(args.quiet)
    failures = RunFailures(lambda folder: f"{PROG} --resume {folder}", args.debug, resume_folder(args.resume))

    def body() -> int:
        if args.num_gpus and args.num_gpus > 1:
            from warp_drive.training.distributed import launch_with_torchrun

            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # torchrun's processes get their own; this one waits
            argv_rest = without_flag(sys.argv[1:] if argv is None else list(argv), ("--num_gpus", "--num-gpus", "-n"))
            return launch_with_torchrun(args.num_gpus, argv_rest, "warp_drive.cli.train")
        return failures.call(lambda: run(args, failures))

    return report_errors(body, args.debug)


if __name__ == "__main__":
    sys.exit(main())
