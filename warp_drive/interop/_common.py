"""Plumbing shared by the interop adapters: building the wrapped env, seeding, start states, done flags.

Nothing here copies step outputs to the host: the only host work is at ``reset()`` (drawing new
initial states on the host, as :class:`~warp_drive.env.env_wrapper.EnvWrapper` itself does once).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from warp_drive.vocab.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext, check_seed
from warp_drive.vocab.done import split_done
from warp_drive.env.placeholders import stack_agent_obs
from warp_drive.vocab.registrar import EnvironmentRegistrar, env_registrar
from warp_drive.env.env_wrapper import EnvWrapper, resolve_backend
from warp_drive.errors import ConfigError, DataShapeError, UsageError
from warp_drive.managers.data_manager import to_device_array
from warp_drive.utils.obs_checks import check_reset_observations

__all__ = ["check_seed", "split_done"]  # re-exported for the adapters

logger = logging.getLogger(__name__)


class InteropError(UsageError):
    """An adapter was used out of order (``step()`` before ``reset()``, after the episode ended, or after
    ``close()``)."""


def make_env(
    env: str | CUDAEnvironmentContext,
    env_config: Mapping[str, Any] | None,
    backend: str,
    registrar: EnvironmentRegistrar | None = None,
) -> CUDAEnvironmentContext:
    """The env instance an adapter wraps.

    Args:
        env: an env instance, or the name of an env registered in ``registrar``.
        env_config: keyword arguments of the registered env class (only with a name).
        backend: resolved backend name; passed to the registered env as ``env_backend``.
        registrar: where names are looked up; default: :data:`warp_drive.env.env_registrar`.

    Raises:
        ConfigError: unknown name (:class:`~warp_drive.errors.UnknownEnvError`), bad arguments,
            or ``env_config`` given with an instance.
    """
    if isinstance(env, str):
        kwargs = dict(env_config or {})
        kwargs.setdefault("env_backend", backend)
        return (registrar or env_registrar).get(env, backend)(**kwargs)
    if isinstance(env, CUDAEnvironmentContext):
        if env_config:
            raise ConfigError(
                "env_config only applies when env is a registered env name; configure the instance "
                f"{type(env).__name__} before passing it"
            )
        return env
    raise ConfigError(
        f"env must be a registered env name or a CUDAEnvironmentContext instance, got {type(env).__name__}"
    )


def build_wrapper(
    env: str | CUDAEnvironmentContext | EnvWrapper,
    env_config: Mapping[str, Any] | None,
    backend: str,
    num_envs: int | None,
    device_id: int | None,
    blocks_per_env: int | None,
    registrar: EnvironmentRegistrar | None = None,
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
            make_env(env, env_config, backend, registrar),
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
def reseed_env(env: Any, seed: int, method: str = "reseed") -> None:
    """``env.reseed(seed)`` (:meth:`~warp_drive.env.context.CUDAEnvironmentContext.reseed`), or ``env.<method>(seed)``
    such as ``reseed_start_states``; an env without the method is left as is."""
    hook = getattr(env, method, None)
    if callable(hook):
        hook(seed)
    else:
        logger.debug("%s has no %s(); nothing re-seeded", type(env).__name__, method)


def shared_host_values(wrapper: EnvWrapper) -> dict[str, np.ndarray]:
    """The env's current host values of its arrays that are not per replica (Tag's role arrays,
    reset pools, ...): every array of its feeds except saved copies, pool targets and scalars."""
    dm = wrapper.cuda_data_manager
    env: Any = wrapper.env
    skip = set(dm.reset_data_list) | set(dm.reset_target_to_pool) | set(dm.scalar_data_list)
    feeds = (env.get_data_dictionary(), env.get_tensor_dictionary(), env.get_reset_pool_dictionary())
    return {name: to_device_array(name, entry["data"]) for feed in feeds for name, entry in feed.items()
            if name not in skip and dm.is_data_on_device(name)}


def refresh_shared_data(wrapper: EnvWrapper, known: dict[str, np.ndarray]) -> None:
    """Write into the data store the env's shared arrays whose host values differ from ``known``
    (the host values last written to the store, from :func:`shared_host_values`; updated in
    place), e.g. the roles and pools a :func:`reseed_env` redrew. Arrays the env did not change
    keep their values on the store (even if a step changed them there).

    Raises:
        DataShapeError: an array changed shape (the env must keep every array's shape).
    """
    dm = wrapper.cuda_data_manager
    changed = []
    for name, value in shared_host_values(wrapper).items():
        old = known.get(name)
        if old is not None and old.shape == value.shape and np.array_equal(old, value):
            continue
        shape = dm.get_shape(name)
        if tuple(value.shape) != tuple(shape):
            raise DataShapeError(
                f"{wrapper.name}: '{name}' has shape {tuple(value.shape)} after re-seeding but {tuple(shape)} "
                f"on the data store; an env must keep every array's shape"
            )
        dm.assign(name, value)
        known[name] = value
        changed.append(name)
    if changed:
        logger.debug("%s: rewrote %s after re-seeding", wrapper.name, changed)


def install_start_states(
    wrapper: EnvWrapper,
    rows: Sequence[int],
    seeds: Sequence[int | None],
    shared_seed: int | None,
    known: dict[str, np.ndarray],
) -> None:
    """Draw a new initial state on the host for each replica in ``rows`` and make it that replica's
    reset state: row ``rows[k]`` of every saved copy ``<name>_at_reset`` (``observations`` included;
    arrays refilled from a reset pool are left to the pool), which its next device reset restores.

    ``shared_seed`` (pass it only when every replica restarts) first re-seeds the whole env
    (:func:`reseed_env`) and rewrites the shared arrays that differ from ``known``, the adapter's record
    of the store (:func:`refresh_shared_data`). ``seeds[k]``, when not None, re-seeds the start-state
    RNG (``reseed_start_states``) before ``env.reset()`` draws replica ``rows[k]``'s state.

    Raises:
        DataShapeError: a new state's array has another shape than the replica's slot on the store.
        SpaceMismatchError: a new initial observation lies outside the observation space.
    """
    dm = wrapper.cuda_data_manager
    env: Any = wrapper.env
    if shared_seed is not None:
        reseed_env(env, shared_seed)
        refresh_shared_data(wrapper, known)
    pools = dm.reset_target_to_pool
    names = [n for n in dm.reset_data_list if n not in pools]
    if not names or not rows:
        return
    saved = {n: dm.pull_data_from_device(n + Constants.AT_RESET_SUFFIX) for n in names}
    missing: set[str] = set()
    for row, seed in zip(rows, seeds):
        if seed is not None:
            reseed_env(env, seed, "reseed_start_states")
        obs = env.reset()
        check_reset_observations(obs, env.observation_space, wrapper.name)
        feeds = (env.get_data_dictionary(), env.get_tensor_dictionary())
        values = {name: entry["data"] for feed in feeds for name, entry in feed.items()}
        values.update(stack_agent_obs(obs, sorted(obs)))
        for name in names:
            if name not in values:
                missing.add(name)
                continue
            target = saved[name]
            value = np.asarray(values[name])
            if value.size != int(np.prod(target.shape[1:])):
                raise DataShapeError(
                    f"{wrapper.name}: replica {row}'s new '{name}' has shape {value.shape}, but each "
                    f"replica's slot on the data store has shape {target.shape[1:]}; reset() must "
                    f"return arrays of the shape of the first reset"
                )
            target[row] = value.astype(target.dtype, copy=False).reshape(target.shape[1:])
    if missing:
        logger.debug("reset-copied arrays not provided by the env's feeds, kept as they were: %s", sorted(missing))
    for name in names:
        if name not in missing:
            dm.assign(name + Constants.AT_RESET_SUFFIX, saved[name])
    env.timestep = 0


# ----------------------------------------------------------------------------- done flags
def done_tensors(dm: Any) -> tuple[Any, Any, Any]:
    """The live ``(_done_, _timestep_, _truncated_ or None)`` tensors of a data store (the
    truncation flag exists when the env writes it)."""
    truncated = dm.data_on_device_via_torch(Constants.TRUNCATED) if dm.is_data_on_device(Constants.TRUNCATED) else None
    return dm.data_on_device_via_torch(Constants.DONE), dm.data_on_device_via_torch(Constants.TIMESTEP), truncated
