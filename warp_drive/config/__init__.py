"""Validated run configuration (frozen dataclasses parsed from WarpDrive-shaped YAML).

Typical use::

    from warp_drive.config import load_run_config, check_env_kwargs

    cfg = load_run_config("tag_continuous.yaml", overrides=["trainer.num_envs=500"])
    check_env_kwargs(TagContinuous, cfg.env, supplied_by_caller=("env_backend",))
    cfg.trainer.batch_size_per_env      # derived, read-only

Importing this package has no side effects (``defaults.yaml`` is read on first use).
``PolicyConfig`` (A2C/PPO's section, ``ActorCriticConfig`` of ``warp_drive.training.algorithms.actor_critic``)
and ``ALGORITHMS`` resolve on first use: each algorithm's config lives in its folder.
"""

from typing import Any


from warp_drive.config.env_kwargs import check_env_kwargs
from warp_drive.config.load import apply_override, load_run_config, parse_override, recursive_merge_config_dicts
from warp_drive.config.model import ModelConfig
from warp_drive.config.schema import (
    ENV_BACKENDS,
    RunConfig,
    SamplerConfig,
    SavingConfig,
    TrainerConfig,
)

__all__ = [
    "ALGORITHMS",
    "ENV_BACKENDS",
    "ModelConfig",
    "PolicyConfig",
    "RunConfig",
    "SamplerConfig",
    "SavingConfig",
    "TrainerConfig",
    "apply_override",
    "check_env_kwargs",
    "load_run_config",
    "parse_override",
    "recursive_merge_config_dicts",
]


def __getattr__(name: str) -> Any:
    from warp_drive.config import schema

    if name in schema.MOVED_NAMES:
        return getattr(schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
