"""Record and animate Tag episodes (continuous or grid world) with matplotlib.

The Tag envs' render hook (``TagContinuous.render_rollout``, ``TagGridWorld.render_rollout``)
draws with :func:`tag_rollout_animation`; the generic recording and saving live in
:mod:`warp_drive.testing.rollout_animation`. Here, for Tag:

1. :func:`collect_tag_episode` records one episode's positions as a :class:`TagEpisode`.
2. :func:`render_tag_episode` / :func:`render_tag_rollout` draw positions, one frame per time
   step, into a GIF (Pillow) or an MP4 (ffmpeg; falls back to GIF when ffmpeg is missing).
3. :func:`generate_tag_env_rollout_animation` is WarpDrive 2.7.1's helper for a trainer.

Arrays recorded on the GPU work too, e.g. from ``loc_x_for_log`` / ``loc_y_for_log`` of an env
logged with ``log_data_across_episode``: pass them to :func:`render_tag_rollout` directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from warp_drive.errors import ConfigError
from warp_drive.testing.rollout_animation import Policy, collect_episode, output_path, save_animation


@dataclass(frozen=True)
class TagEpisode:
    """One env's trajectory.

    Shapes:
        loc_x, loc_y: (steps + 1, N), row 0 is the reset state.
        still_in_the_game: (steps + 1, N) int32 (all ones for envs without that state).
        rewards: (steps, N) float32.
        is_tagger: (N,) bool.
    """

    loc_x: npt.NDArray[Any]
    loc_y: npt.NDArray[Any]
    still_in_the_game: npt.NDArray[np.int32]
    rewards: npt.NDArray[np.float32]
    is_tagger: npt.NDArray[np.bool_]
    grid_length: float
    gridworld: bool


def collect_tag_episode(env: Any, policy: Policy | None = None, seed: int = 0) -> TagEpisode:
    """Run one episode of a Tag env's NumPy reference and record its positions.

    Args:
        env: a ``TagContinuous`` or ``TagGridWorld`` instance (fresh or already used).
        policy: ``policy(obs (N, obs_dim), t) -> actions``; None draws uniform random actions.
        seed: seed of the random actions.

    Returns:
        The trajectory until ``_done_`` is raised (at the latest after ``episode_length`` steps).
    """
    names = tuple(env.render_state_names)
    episode = collect_episode(env, policy, seed, names)
    xs = episode.states["loc_x"]
    flags = episode.states.get("still_in_the_game", np.ones(xs.shape, np.int32))
    return TagEpisode(
        loc_x=xs, loc_y=episode.states["loc_y"], still_in_the_game=flags.astype(np.int32),
        rewards=episode.rewards, is_tagger=np.asarray(env.is_tagger, bool),
        grid_length=float(env.grid_length), gridworld=np.issubdtype(xs.dtype, np.integer),
    )


def render_tag_episode(episode: TagEpisode, path: str | Path, **kwargs: Any) -> Path:
    """:func:`render_tag_rollout` for a :class:`TagEpisode`."""
    return render_tag_rollout(
        episode.loc_x, episode.loc_y, episode.is_tagger, path,
        still_in_the_game=episode.still_in_the_game, grid_length=episode.grid_length,
        gridworld=episode.gridworld, **kwargs,
    )


def render_tag_rollout(
    loc_x: Any,
    loc_y: Any,
    is_tagger: Any,
    path: str | Path,
    still_in_the_game: Any = None,
    grid_length: float | None = None,
    gridworld: bool = False,
    fps: int = 10,
    dpi: int = 80,
    title: str = "Tag",
) -> Path:
    """Animate positions over time (one frame per row) into ``path`` (.gif or .mp4).

    Args:
        loc_x, loc_y: (frames, N) positions of one env.
        is_tagger: (N,) bools (taggers red, runners blue).
        path: output file; ``.mp4`` needs ffmpeg and falls back to ``.gif`` with a warning.
        still_in_the_game: (frames, N) flags; runners out of the game are drawn as grey crosses.
        grid_length: side of the arena (default: the largest coordinate).
        gridworld: draw integer cells (limits [-0.5, L + 0.5]) instead of a continuous square.
        fps, dpi, title: animation settings.

    Returns:
        The path actually written.

    Raises:
        ConfigError: shapes disagree or the suffix is neither .gif nor .mp4.
    """
    path = output_path(Path(path))
    anim = tag_rollout_animation(loc_x, loc_y, is_tagger, still_in_the_game, grid_length, gridworld, fps, title)
    return save_animation(anim, path, fps, dpi)


def tag_rollout_animation(
    loc_x: Any,
    loc_y: Any,
    is_tagger: Any,
    still_in_the_game: Any = None,
    grid_length: float | None = None,
    gridworld: bool = False,
    fps: int = 10,
    title: str = "Tag",
    *,
    tagger_color: str = "tab:red",
    runner_color: str = "tab:blue",
    tagged_color: str = "0.6",
    figsize: tuple[float, float] = (5.0, 5.0),
) -> Any:
    """The animation of :func:`render_tag_rollout` as a ``matplotlib.animation.FuncAnimation``
    (not saved: call ``.save(...)``, ``.to_jshtml()`` or, with ffmpeg, ``.to_html5_video()``).

    Raises:
        ConfigError: shapes disagree.
    """
    from matplotlib import animation
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    xs, ys = np.asarray(loc_x, float), np.asarray(loc_y, float)
    tagger = np.asarray(is_tagger, bool)
    if xs.ndim != 2 or xs.shape != ys.shape or tagger.shape != (xs.shape[1],):
        raise ConfigError(
            f"loc_x {xs.shape} and loc_y {ys.shape} must be (frames, N) and is_tagger {tagger.shape} (N,)"
        )
    flags = np.ones(xs.shape, bool) if still_in_the_game is None else np.asarray(still_in_the_game) != 0
    if flags.shape != xs.shape:
        raise ConfigError(f"still_in_the_game has shape {flags.shape}; expected {xs.shape}")
    length = float(grid_length) if grid_length is not None else float(max(xs.max(), ys.max(), 1.0))

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    pad = 0.5 if gridworld else 0.02 * length
    ax.set_xlim(-pad, length + pad)
    ax.set_ylim(-pad, length + pad)
    ax.set_aspect("equal")
    if gridworld:
        ax.set_xticks(np.arange(0, int(length) + 1, max(1, int(length) // 10)))
        ax.grid(True, linewidth=0.3)
    caption = ax.set_title(title)
    empty = np.empty((0, 2))
    taggers = ax.scatter([], [], c=tagger_color, s=40, label="tagger", zorder=3)
    runners = ax.scatter([], [], c=runner_color, s=25, label="runner", zorder=2)
    tagged = ax.scatter([], [], c=tagged_color, marker="x", s=20, label="tagged", zorder=1)
    ax.legend(loc="upper right", fontsize="small")
    num_runners = int((~tagger).sum())

    def draw(frame: int) -> tuple[Any, ...]:
        pts = np.column_stack([xs[frame], ys[frame]])
        taggers.set_offsets(pts[tagger] if tagger.any() else empty)
        live = ~tagger & flags[frame]
        out = ~tagger & ~flags[frame]
        runners.set_offsets(pts[live] if live.any() else empty)
        tagged.set_offsets(pts[out] if out.any() else empty)
        caption.set_text(f"{title}  t = {frame}  runners left: {int(live.sum())}/{num_runners}")
        return taggers, runners, tagged, caption

    return animation.FuncAnimation(fig, draw, frames=xs.shape[0], interval=1000.0 / fps, blit=False)


def generate_tag_env_rollout_animation(
    trainer: Any,
    fps: int = 50,
    tagger_color: str = "#C843C3",
    runner_color: str = "#245EB6",
    runner_not_in_game_color: str = "#666666",
    fig_width: float = 6,
    fig_height: float = 6,
) -> Any:
    """One episode of a trainer's Tag env with its current policies, as a matplotlib animation.

    WarpDrive 2.7.1's helper (same arguments): ``trainer`` is a
    :class:`~warp_drive.training.trainer.Trainer` or a Lightning ``WarpDriveModule``, anything with
    ``fetch_episode_states`` and the env wrapper as ``cuda_envs`` (or ``env_wrapper``). Frames run
    from the reset state to the state that ends env 0's episode.

    Returns:
        A ``matplotlib.animation.FuncAnimation`` (``.save("x.gif", writer="pillow")``,
        ``.to_jshtml()``, or ``.to_html5_video()`` where ffmpeg is installed).
    """
    if trainer is None or not hasattr(trainer, "fetch_episode_states"):
        raise ConfigError(f"generate_tag_env_rollout_animation needs a Trainer or WarpDriveModule; got {trainer!r}")
    wrapper = getattr(trainer, "cuda_envs", None) or getattr(trainer, "env_wrapper", None)
    if wrapper is None:
        raise ConfigError(f"{type(trainer).__name__} exposes no env wrapper (cuda_envs / env_wrapper)")
    env = wrapper.env
    names = ["loc_x", "loc_y", "still_in_the_game"]
    states = trainer.fetch_episode_states(names)
    frames = int(np.isfinite(states["loc_x"]).all(axis=1).sum())  # rows after the episode end are NaN
    n = int(env.num_agents)
    is_tagger = np.isin(np.arange(n), np.fromiter(env.taggers, int))
    return tag_rollout_animation(
        states["loc_x"][:frames], states["loc_y"][:frames], is_tagger, states["still_in_the_game"][:frames],
        grid_length=float(env.grid_length), gridworld=False, fps=fps, title="Continuous Tag",
        tagger_color=tagger_color, runner_color=runner_color, tagged_color=runner_not_in_game_color,
        figsize=(float(fig_width), float(fig_height)),
    )
