"""Rollout recording and GIF rendering (no GPU): the library's generic recorder and render hook,
and the Tag envs' renderer that lives with them (example_envs/tag_continuous/rendering.py)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from example_envs.classic_control.cartpole.cartpole import ClassicControlCartPoleEnv
from example_envs.tag_continuous.rendering import collect_tag_episode, render_tag_episode, render_tag_rollout
from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import TagGridWorld
from warp_drive.errors import ConfigError, UsageError
from warp_drive.testing.rollout_animation import collect_episode, render_episode


def test_collect_episode_records_every_step_until_the_end():
    env = TagContinuous(num_taggers=1, num_runners=3, episode_length=6, seed=0, tagging_distance=0.001)
    episode = collect_tag_episode(env, seed=1)
    assert episode.loc_x.shape == (7, 4) and episode.rewards.shape == (6, 4)
    assert episode.still_in_the_game.dtype == np.int32
    assert episode.is_tagger.sum() == 1 and not episode.gridworld


def test_collect_episode_with_a_policy():
    env = TagGridWorld(num_taggers=2, grid_length=3, episode_length=4)
    episode = collect_tag_episode(env, policy=lambda obs, t: np.full(3, 1))  # everyone moves right
    assert episode.gridworld
    np.testing.assert_array_equal(episode.loc_x[-1], [3, 3, 3])


def test_gif_has_one_frame_per_time_step(tmp_path):
    env = TagContinuous(num_taggers=1, num_runners=3, episode_length=5, seed=0, tagging_distance=0.001)
    episode = collect_tag_episode(env, seed=2)
    path = render_tag_episode(episode, tmp_path / "tag.gif", fps=5, dpi=30)
    assert path.is_file()
    with Image.open(path) as gif:
        assert gif.n_frames == episode.loc_x.shape[0] == 6


def test_gridworld_gif_and_shape_checks(tmp_path):
    xs = np.array([[0, 1], [1, 1], [2, 1]])
    path = render_tag_rollout(xs, xs, [True, False], tmp_path / "grid.gif", grid_length=3, gridworld=True, dpi=30)
    with Image.open(path) as gif:
        assert gif.n_frames == 3
    with pytest.raises(ConfigError, match="is_tagger"):
        render_tag_rollout(xs, xs, [True], tmp_path / "bad.gif")
    with pytest.raises(ConfigError, match=".gif or .mp4"):
        render_tag_rollout(xs, xs, [True, False], tmp_path / "bad.avi")


@pytest.mark.parametrize("env", [
    TagContinuous(num_taggers=1, num_runners=3, episode_length=5, seed=0),
    TagGridWorld(num_taggers=2, grid_length=3, episode_length=4),
], ids=["tag_continuous", "tag_gridworld"])
def test_generic_render_hook_draws_any_env_that_has_one(env, tmp_path):
    """``collect_episode`` records the env's ``render_state_names``; ``render_episode`` draws them
    through the env's own ``render_rollout``: the library knows no env by name."""
    episode = collect_episode(env, seed=3)
    assert set(episode.states) == set(env.render_state_names)
    assert all(v.shape[0] == episode.num_frames for v in episode.states.values())
    short = episode.frames(slice(None, 3))
    assert short.num_frames == 3 and short.rewards.shape[0] == 2
    path = render_episode(env, short, tmp_path / "hook.gif", fps=4, dpi=30)
    with Image.open(path) as gif:
        assert gif.n_frames == 3


def test_an_env_without_a_renderer_says_so(tmp_path):
    env = ClassicControlCartPoleEnv(episode_length=3, seed=0)
    with pytest.raises(ConfigError, match="render_state_names"):
        collect_episode(env)
    episode = collect_episode(env, names=("state",))  # recording works for any array
    assert episode.states["state"].shape == (4, 1, 4)
    with pytest.raises(UsageError, match="no renderer"):
        render_episode(env, episode, tmp_path / "x.gif")
