"""Plumbing shared by the interop adapters: building the wrapped env, seeding, start states, done flags.

Nothing here copies step outputs to the host: the only host work is at ``reset()`` (drawing new
initial states on the host, as :class:`~warp_drive.env_wrapper.EnvWrapper` itself does once).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from warp_drive.env_wrapper import EnvWrapper, resolve_backend
from warp_drive.errors import ConfigError, WarpDriveError
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.gpu_environment_context import CUDAEnvironmentContext
from warp_drive.utils.placeholders import stack_agent_obs

logger = logging.getLogger(__name__)


class InteropError(WarpDriveError, RuntimeError):
    """An adapter was used out of order (``step()`` before ``reset()``, after the episode ended, or after
    ``close()``)."""


def make_env(
    env: str | CUDAEnvironmentContext,
    env_config: Mapping[str, Any] | None,
    backend: str,
) -> CUDAEnvironmentContext:
    """The env instance an adapter wraps.

    Args:
        env: an env instance, or the name of an example env (``example_envs.get_example_env_class``).
        env_config: keyword arguments of the example env class (only with a name).
        backend: resolved backend name; passed to the example env as ``env_backend``.

    Raises:
        ConfigError: unknown name, bad arguments, or ``env_config`` given with an instance.
    """
    if isinstance(env, str):
        from example_envs import get_example_env_class

        kwargs = dict(env_config or {})
        kwargs.setdefault("env_backend", backend)
        return get_example_env_class(env)(**kwargs)
    if isinstance(env, CUDAEnvironmentContext):
        if env_config:
            raise ConfigError(
                "env_config only applies when env is an example env name; configure the instance "
                f"{type(env).__name__} before passing it"
            )
        return env
    raise ConfigError(
        f"env must be an example env name or a CUDAEnvironmentContext instance, got {type(env).__name__}"
    )


def build_wrapper(
    env: str | CUDAEnvironmentContext | EnvWrapper,
    env_config: Mapping[str, Any] | None,
    backend: str,
    num_envs: int | None,
    device_id: int | None,
    blocks_per_env: int | None,
) -> EnvWrapper:
    """An :class:`EnvWrapper` whose data is already pushed (``reset_all_envs()`` was called once)."""
    if isinstance(env, EnvWrapper):
        if env_config:
            raise ConfigError("env_config cannot be applied to an existing EnvWrapper")
        if num_envs is not None and num_envs != env.n_envs:
            raise ConfigError(
                f"num_envs={num_envs} but the given EnvWrapper runs {env.n_envs} replicas; omit num_envs"
            )
        wrapper = env
    else:
        backend = resolve_backend(backend)
        wrapper = EnvWrapper(
            make_env(env, env_config, backend),
            num_envs=1 if num_envs is None else num_envs,
            env_backend=backend,
            device_id=device_id,
            blocks_per_env=blocks_per_env,
        )
    if wrapper.reset_on_host:
        wrapper.reset_all_envs()
    if not wrapper.cuda_data_manager.is_data_on_device(Constants.OBSERVATIONS):
        raise ConfigError(
            f"{wrapper.name} has no '{Constants.OBSERVATIONS}' array (dict observations are split into "
            f"'{Constants.OBSERVATIONS}_<key>' arrays); the interop adapters need flat Box observations"
        )
    return wrapper


def agent_ids(env: Any) -> list[Any]:
    """The env's agent ids in data-store order (the placeholders stack agents in sorted id order)."""
    return sorted(env.observation_space)


# ----------------------------------------------------------------------------- seeding
def reseed_env_rng(env: Any, seed: int) -> list[str]:
    """Re-seed the host RNG an env draws its initial states from.

    Tried in order: an env method ``reseed(seed)`` (the hook for custom envs); the classic-control
    ``_reset_rng`` (rebuilt as ``Generator(PCG64(SeedSequence(seed)))``, the generator gymnasium's
    ``reset(seed=seed)`` builds, so the drawn initial state equals gymnasium's); the Tag envs'
    ``rng`` (``np.random.default_rng(seed)``).

    Returns:
        What was re-seeded (empty when the env exposes no RNG this function knows).
    """
    hook = getattr(env, "reseed", None)
    if callable(hook):
        hook(seed)
        return ["reseed()"]
    done = []
    if isinstance(getattr(env, "_reset_rng", None), np.random.Generator):
        env._reset_rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
        done.append("_reset_rng")
    if isinstance(getattr(env, "rng", None), np.random.Generator):
        env.rng = np.random.default_rng(seed)
        done.append("rng")
    if not done:
        logger.debug("%s exposes no host RNG; reset(seed=...) only re-seeds reset-pool draws", type(env).__name__)
    return done


def check_seed(seed: Any, what: str = "seed") -> int:
    """A non-negative Python int (bools refused)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"{what}={seed!r} must be a non-negative integer or None")
    return int(seed)


def _feed_values(feed: DataFeed) -> dict[str, Any]:
    return {name: entry["data"] for name, entry in feed.items()}


def install_start_states(
    wrapper: EnvWrapper,
    rows: Sequence[int],
    seeds: Sequence[int | None],
) -> int:
    """Draw a new initial state on the host for each replica in ``rows`` and make it that replica's
    reset state.

    For replica ``rows[k]``: if ``seeds[k]`` is not None the env's host RNG is re-seeded with it
    (:func:`reseed_env_rng`); then ``env.reset()`` draws one initial state, and every array the env
    flags ``save_copy_and_apply_at_reset`` (and the ``observations`` placeholder) gets that state in
    row ``rows[k]`` of its saved copy (``<name>_at_reset``). The next device reset of that replica
    restores it. Arrays refilled from a reset pool are left to the pool.

    Returns:
        The number of saved-copy arrays rewritten.
    """
    dm = wrapper.cuda_data_manager
    env: Any = wrapper.env
    pools = dm.reset_target_to_pool
    names = [n for n in dm.reset_data_list if n not in pools]
    if not names or not rows:
        return 0
    saved = {n: dm.pull_data_from_device(n + Constants.AT_RESET_SUFFIX) for n in names}
    missing: set[str] = set()
    for row, seed in zip(rows, seeds):
        if seed is not None:
            reseed_env_rng(env, seed)
        obs = env.reset()
        values = _feed_values(env.get_data_dictionary())
        values.update(_feed_values(env.get_tensor_dictionary()))
        values.update(stack_agent_obs(obs, sorted(obs)))
        for name in names:
            if name not in values:
                missing.add(name)
                continue
            target = saved[name]
            target[row] = np.asarray(values[name], dtype=target.dtype).reshape(target.shape[1:])
    if missing:
        logger.debug("reset-copied arrays not provided by the env's feeds, kept as they were: %s", sorted(missing))
    for name in names:
        if name not in missing:
            dm.assign(name + Constants.AT_RESET_SUFFIX, saved[name])
    env.timestep = 0
    return len(names) - len(missing)


# ----------------------------------------------------------------------------- done flags
def split_done(done: torch.Tensor, timestep: torch.Tensor, episode_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(terminated, truncated)`` bool tensors from ``_done_`` and ``_timestep_`` (device ops only).

    ``_done_ > 0`` ends the episode. It was truncated by the time limit when ``_done_ == 1`` and
    ``_timestep_ >= episode_length``; any other end is a termination (``_done_ == 2`` is the
    MountainCars' goal, always a termination). An env whose natural end falls exactly on the last
    step and that reports it as ``_done_ == 1`` is indistinguishable from a truncation and is
    reported truncated (the rule the trainer's rollout uses as well).
    """
    ended = done > 0
    truncated = (done == 1) & (timestep >= episode_length)
    return ended & ~truncated, truncated
