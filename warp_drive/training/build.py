"""Building a run in one place: run config -> env -> env wrapper -> trainer (its engine).

The command line (:mod:`warp_drive.training.example_training_script`), the Lightning engine
factory (:class:`~warp_drive.training.lightning.engine.ExampleEnvEngineFactory`) and 2.7.1's
``setup_trainer_and_train`` all call :func:`build_trainer`; the engine itself is built by its
constructor from the env wrapper (:class:`~warp_drive.training.engine.Engine`), which is also how
code written against 2.7.1 builds a ``Trainer``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def build_env_wrapper(config: Any, env_cls: type, *, backend: str, device_id: int | None = None,
                      process_id: int = 0) -> Any:
    """The env of ``env_cls`` built from ``config.env`` and wrapped in ``trainer.num_envs`` replicas.

    Raises:
        ConfigError: ``config.env`` has arguments ``env_cls`` does not take (with a did-you-mean).
    """
    from warp_drive.config.env_kwargs import check_env_kwargs
    from warp_drive.env_wrapper import EnvWrapper

    check_env_kwargs(env_cls, config.env, supplied_by_caller=("env_backend",))
    env = env_cls(**config.env)
    return EnvWrapper(env, num_envs=config.trainer.num_envs, env_backend=backend, device_id=device_id,
                      process_id=process_id)


def build_trainer(
    config: Any,
    env_cls: type,
    *,
    backend: str,
    rank: int = 0,
    world_size: int = 1,
    device_id: int | None = None,
    results_dir: str | Path | None = None,
    verbose: bool = True,
    tensorboard: bool = False,
    policy_map: Mapping[str, Sequence[int]] | None = None,
) -> Any:
    """A :class:`~warp_drive.training.trainer.Trainer` (``TrainerDDPG`` for DDPG policies) for a
    validated run config.

    Args:
        config: the :class:`~warp_drive.config.RunConfig`.
        env_cls: the env class the config's ``env`` section builds.
        backend: ``"pycuda"`` or ``"cpu"``.
        rank, world_size: this process among those training together.
        device_id: the GPU of the env replicas (None: the default one).
        results_dir: the run folder (see :func:`~warp_drive.training.engine.run_directory`).
        verbose, tensorboard: as for the Trainer.
        policy_map: ``{tag: [agent ids]}``; default: ``default_policy_map`` of the example script.
    """
    from warp_drive.training.ddpg import trainer_class_for
    from warp_drive.training.example_training_script import default_policy_map

    wrapper = build_env_wrapper(config, env_cls, backend=backend, device_id=device_id, process_id=rank)
    pmap = dict(policy_map) if policy_map is not None else default_policy_map(wrapper.env, config.policy_tags)
    return trainer_class_for(config)(wrapper, config, pmap, num_devices=world_size, device_id=device_id or 0,
                                     results_dir=None if results_dir is None else str(results_dir), verbose=verbose,
                                     rank=rank, tensorboard=tensorboard)
