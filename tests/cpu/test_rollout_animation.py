"""Rollout recording and GIF rendering of Tag episodes (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from example_envs.tag_continuous.tag_continuous import TagContinuous
from example_envs.tag_gridworld.tag_gridworld import TagGridWorld
from warp_drive.errors import ConfigError
from warp_drive.utils.rollout_animation import (
    collect_tag_episode,
    render_episode,
    render_tag_rollout,
)


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
    path = render_episode(episode, tmp_path / "tag.gif", fps=5, dpi=30)
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
