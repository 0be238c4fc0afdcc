"""Train an example env from its bundled YAML config (or your own), on the GPU or the CPU.

Examples::

    python -m warp_drive.training.example_training_script --env tag_continuous
    python -m warp_drive.training.example_training_script --env cartpole trainer.num_envs=500
    python -m warp_drive.training.example_training_script --config my_run.yaml --backend cpu
    python -m warp_drive.training.example_training_script --env tag_continuous --resume results/run/
    warp-drive-train --env tag_gridworld --results_dir /tmp/gridworld

Overrides are dotted ``key=value`` pairs (YAML values). Ctrl-C saves a checkpoint and exits.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any, Sequence

logger = logging.getLogger("warp_drive.training.example_training_script")


def add_run_source_arguments(p: argparse.ArgumentParser) -> None:
    """``--env`` | ``--config``, dotted overrides and ``--backend`` (shared by the training CLIs)."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--env", "-e", help="example env name (its bundled run config is used)")
    src.add_argument("--config", "-c", help="path of a run config YAML (the env is its 'name')")
    p.add_argument("overrides", nargs="*", help="dotted overrides, e.g. trainer.num_envs=500")
    p.add_argument("--backend", choices=("pycuda", "cpu"), default=None,
                   help="default: pycuda when pycuda and a GPU are present, else cpu")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_source_arguments(p)
    p.add_argument("--results_dir", default=None, help="run directory, relative to the current one (default: saving.basedir/name/tag/<time>)")
    p.add_argument("--resume", default=None, help="checkpoint file or run directory to continue from")
    p.add_argument("--num_gpus", "-n", type=int, default=None, help="processes/GPUs (torchrun is used for > 1)")
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard scalars")
    p.add_argument("--evaluate", action="store_true", help="only evaluate (greedy) the loaded weights")
    p.add_argument("--auto_scale", "-a", action="store_true",
                   help="find the num_envs and batch size per env that fit in GPU memory and run fastest, then train")
    p.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    return p.parse_args(argv)


def choose_backend(requested: str | None) -> str:
    """The requested backend, else pycuda when usable, else cpu (with a notice)."""
    from warp_drive.utils.device import has_cuda_device

    if requested:
        return requested
    if has_cuda_device():
        return "pycuda"
    logger.warning("pycuda or a CUDA GPU is missing: running on the cpu backend (NumPy env steps)")
    return "cpu"


def default_policy_map(env: Any, tags: Sequence[str]) -> dict[str, list[int]]:
    """All agents for a single policy; tagger/runner groups for the Tag envs."""
    n = env.num_agents
    if len(tags) == 1:
        return {tags[0]: list(range(n))}
    groups = {"tagger": sorted(getattr(env, "taggers", {})), "runner": sorted(getattr(env, "runners", {}))}
    if set(tags) <= set(groups) and all(groups[t] for t in tags):
        return {t: groups[t] for t in tags}
    from warp_drive.errors import ConfigError

    raise ConfigError(f"cannot map policies {list(tags)} to agents of {type(env).__name__}; pass a policy map in code")


def build(args: argparse.Namespace) -> Any:
    """Config, env, wrapper and trainer from the command line (one rank under torchrun)."""
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.config.env_kwargs import check_env_kwargs
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    path = get_default_config_path(args.env) if args.env else args.config
    overrides = list(args.overrides)
    backend = choose_backend(args.backend)
    overrides.append(f"trainer.env_backend={backend}")
    from warp_drive.training.distributed import init_from_env

    ctx = init_from_env(backend)
    rank, device_id = ctx.rank, (ctx.local_rank if backend == "pycuda" and ctx.is_distributed else None)
    config = load_run_config(path, overrides)
    env_cls = get_example_env_class(args.env or config.name)
    check_env_kwargs(env_cls, config.env, supplied_by_caller=("env_backend",))
    env = env_cls(**config.env)
    wrapper = EnvWrapper(env, num_envs=config.trainer.num_envs, env_backend=backend, device_id=device_id, process_id=rank)
    pmap = default_policy_map(env, config.policy_tags)
    results_dir = str(Path(args.results_dir).resolve()) if args.results_dir else None  # relative to the cwd
    trainer = Trainer(wrapper, config, pmap, results_dir=results_dir, verbose=not args.quiet and rank == 0, rank=rank,
                      tensorboard=args.tensorboard, num_devices=ctx.world_size)
    if args.resume:
        trainer.load_checkpoint(args.resume)
    return trainer


def auto_scale_overrides(args: argparse.Namespace) -> list[str]:
    """Search num_envs and steps per env on the GPU; return the overrides to train with."""
    import gc

    import torch

    from example_envs import get_default_config_path
    from warp_drive.config import load_run_config
    from warp_drive.training.auto_scale import gpu_free_bytes, search

    if choose_backend(args.backend) != "pycuda":
        from warp_drive.errors import ConfigError

        raise ConfigError("--auto_scale sizes runs for GPU memory; it needs the pycuda backend and a GPU")
    base = load_run_config(get_default_config_path(args.env) if args.env else args.config, list(args.overrides))

    def trial(envs: int, steps: int) -> tuple[float, int]:
        trial_args = argparse.Namespace(**{**vars(args), "resume": None, "quiet": True, "results_dir": "/tmp/warp_drive_auto_scale",
                                           "overrides": [*args.overrides, f"trainer.num_envs={envs}",
                                                         f"trainer.train_batch_size={envs * steps}",
                                                         "trainer.num_episodes=100000000", "saving.metrics_log_freq=100000000",
                                                         "saving.model_params_save_freq=100000000"]})
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


def run(args: argparse.Namespace) -> int:
    if args.auto_scale:
        args.overrides = [*args.overrides, *auto_scale_overrides(args)]
    trainer = build(args)
    if args.evaluate:
        for tag, res in trainer.evaluate().items():
            print(f"{tag}: mean episode return {res['episode_return'].mean():.3f} over {len(res['episode_return'])} episodes")
        return 0
    start = time.perf_counter()
    try:
        trainer.train()
    except KeyboardInterrupt:
        path = trainer.save_checkpoint()  # every rank writes its part
        if trainer.rank == 0:
            print(f"\ninterrupted at iteration {trainer.iteration}; checkpoint saved to {path}")
        return 0
    finally:
        trainer.graceful_close()
    if trainer.rank != 0:
        return 0
    wall = time.perf_counter() - start
    steps = trainer.perf["steps"]
    world = trainer.num_devices
    print(f"trained {trainer.iteration} iterations, {world * steps:,} env steps on {world} process(es) in {wall:.1f} s "
          f"({world * trainer.env_steps_per_second:,.0f} env steps/s); results in {trainer.save_dir}")
    return 0


def _run_or_explain_oom(args: argparse.Namespace) -> int:
    """Run; turn a device out-of-memory error into a message that says what to change."""
    from warp_drive.training.auto_scale import is_out_of_memory

    try:
        return run(args)
    except Exception as err:  # noqa: BLE001
        if not is_out_of_memory(err):
            raise
        print(f"error: this configuration does not fit in GPU memory ({str(err).splitlines()[0]}).\n"
              "Lower trainer.num_envs or trainer.train_batch_size, or pass --auto_scale to find the largest "
              "configuration that fits.", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    if args.num_gpus and args.num_gpus > 1:
        from warp_drive.training.distributed import launch_with_torchrun

        return launch_with_torchrun(args.num_gpus, sys.argv[1:])
    return _run_or_explain_oom(args)


if __name__ == "__main__":
    sys.exit(main())
