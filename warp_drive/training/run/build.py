"""Building a run in one place: run config -> env -> env wrapper -> trainer (its engine).

The command lines (:mod:`warp_drive.cli`), the Lightning engine factory
(:class:`~warp_drive.training.lightning.example_factory.ExampleEnvEngineFactory`) and your own code call
:func:`build_trainer` with an env class (found by name by the caller); the engine itself is built by its
constructor from the env wrapper (:class:`~warp_drive.training.engine.Engine`), as 2.7.1 code builds a ``Trainer``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from warp_drive.errors import ConfigError


def default_policy_map(env: Any, tags: Sequence[str]) -> dict[str, list[int]]:
    """All agents for a single policy; else each policy tag names one of the env's agent groups
    (``env.agent_groups()``, e.g. Tag's ``{"tagger": [...], "runner": [...]}``).

    Raises:
        ConfigError: the tags are not agent groups of the env.
    """
    n = env.num_agents
    if len(tags) == 1:
        return {tags[0]: list(range(n))}
    agent_groups = getattr(env, "agent_groups", None)
    groups = agent_groups() if callable(agent_groups) else {}
    if set(tags) <= set(groups) and all(groups[t] for t in tags):
        return {t: sorted(groups[t]) for t in tags}
    raise ConfigError(f"cannot map policies {list(tags)} to agents of {type(env).__name__}, whose agent groups are "
                      f"{sorted(groups)}; name those groups in the config's policy section, or pass a policy map in code")


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
    """A :class:`~warp_drive.training.run.trainer.Trainer` (the plain one, for every algorithm) for a
    validated :class:`~warp_drive.config.RunConfig` whose ``env`` section builds ``env_cls``.

    ``backend``: ``"pycuda"`` or ``"cpu"``; ``device_id``: the GPU of the env replicas (None: the
    default one); ``results_dir``: the run folder (:func:`~warp_drive.training.run.trainer.run_directory`);
    ``policy_map``: default :func:`default_policy_map`; the rest as for the Trainer.
    """
    from warp_drive.training.run.trainer import Trainer

    wrapper = build_env_wrapper(config, env_cls, backend=backend, device_id=device_id, process_id=rank)
    pmap = dict(policy_map) if policy_map is not None else default_policy_map(wrapper.env, config.policy_tags)
    return Trainer(wrapper, config, pmap, num_devices=world_size, device_id=device_id or 0,
                   results_dir=None if results_dir is None else str(results_dir), verbose=verbose, rank=rank,
                   tensorboard=tensorboard)
