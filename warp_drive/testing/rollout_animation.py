"""Record one episode of an env on its NumPy reference and animate it through the env's render hook.

Two steps, usable separately, for any env that has a vectorised ``numpy_step`` and a renderer
(``render_rollout`` and ``render_state_names`` of the env contract,
:class:`~warp_drive.env.context.CUDAEnvironmentContext`):

1. :func:`collect_episode` records the arrays the env draws over one episode of one replica;
2. :func:`render_episode` animates them with ``env.render_rollout`` into a GIF or an MP4.

Arrays recorded on the GPU work too (e.g. ``<name>_for_log`` of arrays logged with
``log_data_across_episode``): pass ``{name: rows}`` to ``env.render_rollout`` directly. The Tag
envs' renderer lives with them (``example_envs.tag_continuous.rendering``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from warp_drive.vocab.constants import Constants
from warp_drive.env.context import has_vectorised_cpu_step
from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

#: policy(observations (N, obs_dim) float32, t) -> actions (N,) or (N, heads) ints
Policy = Callable[[np.ndarray, int], Any]


@dataclass(frozen=True)
class Episode:
    """One env's recorded trajectory.

    Shapes:
        states: ``{name: (steps + 1, ...)}``, row 0 the reset state.
        rewards: (steps, N) float32.
    """

    states: Mapping[str, npt.NDArray[Any]]
    rewards: npt.NDArray[np.float32]

    @property
    def num_frames(self) -> int:
        """Recorded states (steps + 1)."""
        return int(self.rewards.shape[0]) + 1

    def frames(self, rows: slice) -> Episode:
        """The episode reduced to the state rows ``rows`` (e.g. ``slice(None, 50)``, ``slice(None, None, 5)``);
        rewards are kept for the steps leading to the kept states (all steps when every row is kept)."""
        kept = range(self.num_frames)[rows]
        steps = [i - 1 for i in kept if i > 0]
        return Episode({k: v[rows] for k, v in self.states.items()}, self.rewards[steps])


# ----------------------------------------------------------------------------- host data store
def _to_32bit(value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return arr.astype(np.float32)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int32)
    raise ConfigError(f"cannot store dtype {arr.dtype}; use float32 or int32 data")


def numpy_data_store(env: Any, num_envs: int = 1) -> dict[str, Any]:
    """A host-only data store laid out like the EnvWrapper's (for ``env.numpy_step``).

    Resets ``env`` once on the host; reset-copied arrays and reset-pool targets get a leading env
    axis of size ``num_envs``; other arrays are shared; Python scalars become np.float32/np.int32.
    Adds ``observations`` (E, N, obs_dim), ``sampled_actions`` (E, N, heads), ``rewards``,
    ``_done_``, ``_timestep_`` (and ``_truncated_`` for an env that writes it) and the meta values
    ``n_agents``, ``episode_length``, ``n_envs``.
    """
    obs = env.reset()
    n, length = int(env.num_agents), int(env.episode_length)
    targets = {e["attributes"].get("reset_target") for e in env.get_reset_pool_dictionary().values()}
    data: dict[str, Any] = {
        "n_agents": np.int32(n),
        "episode_length": np.int32(length),
        "n_envs": np.int32(num_envs),
        "blocks_per_env": np.int32(1),
    }
    for feed in (env.get_data_dictionary(), env.get_tensor_dictionary()):
        for name, entry in feed.items():
            arr = _to_32bit(entry["data"])  # a new array (astype copies)
            if entry["attributes"].get("save_copy_and_apply_at_reset") or name in targets:
                data[name] = np.broadcast_to(arr, (num_envs, *arr.shape)).copy()
            else:
                data[name] = arr[()] if arr.ndim == 0 else arr
    stacked = np.stack([np.asarray(obs[a], np.float32) for a in sorted(obs)])
    data[Constants.OBSERVATIONS] = np.broadcast_to(stacked, (num_envs, *stacked.shape)).copy()
    data[Constants.ACTIONS] = np.zeros((num_envs, n, _num_heads(env.action_space[0])), np.int32)
    data[Constants.REWARDS] = np.zeros((num_envs, n), np.float32)
    data[Constants.DONE] = np.zeros(num_envs, np.int32)
    data[Constants.TIMESTEP] = np.zeros(num_envs, np.int32)
    if getattr(env, "writes_truncation", False):
        data[Constants.TRUNCATED] = np.zeros(num_envs, np.int32)
    return data


def _num_heads(space: Any) -> int:
    nvec = getattr(space, "nvec", None)
    return 1 if nvec is None else int(np.size(nvec))


def collect_episode(env: Any, policy: Policy | None = None, seed: int = 0,
                    names: tuple[str, ...] | None = None) -> Episode:
    """Run one episode of an env's NumPy reference and record the arrays it draws.

    Args:
        env: an env with a vectorised ``numpy_step`` (fresh or already used).
        policy: ``policy(obs (N, obs_dim), t) -> actions``; None draws uniform random actions.
        seed: seed of the random actions.
        names: arrays to record (env 0's row of each); default ``env.render_state_names``.

    Returns:
        The trajectory until ``_done_`` is raised (at the latest after ``episode_length`` steps).

    Raises:
        ConfigError: the env has no NumPy step, or nothing to record.
    """
    names = tuple(names if names is not None else getattr(env, "render_state_names", ()))
    if not has_vectorised_cpu_step(env) or not names:
        raise ConfigError(f"{type(env).__name__} needs a numpy_step and arrays to record (render_state_names or "
                          "names=) to collect an episode")
    data = numpy_data_store(env, num_envs=1)
    rng = np.random.default_rng(seed)
    n = int(env.num_agents)
    space = env.action_space[0]
    nvec = np.atleast_1d(getattr(space, "nvec", getattr(space, "n", None)))  # uniform actions of a (Multi)Discrete
    frames = [{k: np.array(data[k][0]) for k in names}]
    rewards = []
    for t in range(int(env.episode_length)):
        if policy is None:
            actions = rng.integers(0, nvec, size=(n, nvec.size)).astype(np.int32)
        else:
            actions = np.asarray(policy(data[Constants.OBSERVATIONS][0], t), np.int32)
        data[Constants.ACTIONS][0] = actions.reshape(n, -1)
        env.numpy_step(data)
        frames.append({k: np.array(data[k][0]) for k in names})
        rewards.append(data[Constants.REWARDS][0].copy())
        if data[Constants.DONE][0]:
            break
    states = {k: np.stack([f[k] for f in frames]) for k in names}
    return Episode(states, np.stack(rewards).astype(np.float32))


# ----------------------------------------------------------------------------- rendering
def render_episode(env: Any, episode: Episode, path: str | Path, fps: int = 10, dpi: int = 80, **kwargs: Any) -> Path:
    """Animate ``episode`` with ``env.render_rollout`` into ``path`` (.gif or .mp4).

    Returns:
        The path actually written (``.gif`` when ``.mp4`` was asked for and ffmpeg is missing).

    Raises:
        ConfigError: the suffix is neither .gif nor .mp4.
        UsageError: the env has no renderer.
    """
    path = output_path(Path(path))
    return save_animation(env.render_rollout(episode.states, fps=fps, **kwargs), path, fps, dpi)


def save_animation(anim: Any, path: str | Path, fps: int, dpi: int) -> Path:
    """Write a matplotlib animation to ``path`` (.gif with Pillow, .mp4 with ffmpeg)."""
    from matplotlib import animation

    path = output_path(Path(path))
    writer = animation.PillowWriter(fps=fps) if path.suffix == ".gif" else animation.FFMpegWriter(fps=fps)
    anim.save(str(path), writer=writer, dpi=dpi)
    return path


def output_path(path: Path) -> Path:
    """``path`` checked (.gif or .mp4; .mp4 becomes .gif without ffmpeg) with its folder created.

    Raises:
        ConfigError: another suffix.
    """
    from matplotlib import animation

    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise ConfigError(f"animation path {str(path)!r} must end in .gif or .mp4")
    if suffix == ".mp4" and not animation.writers.is_available("ffmpeg"):
        fallback = path.with_suffix(".gif")
        logger.warning("ffmpeg is not available; writing %s instead of %s", fallback, path)
        path = fallback
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
