"""WarpDrive 2.7.1's training API on the GPU: its published Tag policies, loaded with
``load_model_checkpoint``, reproduce the tag rates measured with them; the tutorial-5 flow runs.

The published policies are found through $WARP_DRIVE_PRETRAINED_DIR, else
<repo>/../shared/device/anchor/pretrained, else <repo>/.device/anchor/pretrained.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
FILES = {"tagger": "tagger_1000010000.state_dict", "runner": "runner_1000010000.state_dict"}
NUM_ENVS = 200
#: Runner rewards of the published run config: -10 when tagged, +1 at the end when not.
TAG_PENALTY, END_REWARD = -10.0, 1.0


def _pretrained_dir() -> Path:
    for c in (os.environ.get("WARP_DRIVE_PRETRAINED_DIR"), REPO.parent / "shared/device/anchor/pretrained",
              REPO / ".device/anchor/pretrained"):
        if c and all((Path(c) / f).is_file() for f in (*FILES.values(), "run_config.yaml")):
            return Path(c)
    pytest.skip("2.7.1's published Tag policies are not here: set $WARP_DRIVE_PRETRAINED_DIR")


@pytest.fixture(scope="module")
def tag_trainer(tmp_path_factory):
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.config._yaml import yaml_loads
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    folder = _pretrained_dir()
    run_config = yaml_loads((folder / "run_config.yaml").read_text())
    run_config["trainer"].update(num_envs=NUM_ENVS, train_batch_size=NUM_ENVS * 50, seed=1234)
    run_config["saving"]["basedir"] = str(tmp_path_factory.mktemp("runs"))
    env_wrapper = EnvWrapper(env_obj=TagContinuous(**run_config["env"]), num_envs=NUM_ENVS, env_backend="pycuda")
    pmap = {"tagger": list(env_wrapper.env.taggers), "runner": list(env_wrapper.env.runners)}
    trainer = Trainer(env_wrapper, run_config, pmap, verbose=False)
    yield trainer
    trainer.graceful_close()


def _uniform(trainer, tag):
    """Zero policy heads: every action of every head has probability 1/n (sampled uniformly)."""
    with torch.no_grad():
        for head in trainer.policies[tag].model.policy_heads:
            head.weight.zero_()
            head.bias.zero_()


def _tagged_fraction(trainer, published):
    folder = _pretrained_dir()
    trainer.load_model_checkpoint({tag: str(folder / FILES[tag]) for tag in published})
    for tag in {"tagger", "runner"} - set(published):
        _uniform(trainer, tag)
    rewards, _ = trainer.evaluate_episodes()  # one episode per env, sampled actions
    runner_return = rewards["runner"].mean()
    return (END_REWARD - runner_return) / (END_REWARD - TAG_PENALTY)


# Measured with a hand-made key mapping in this project's env on an H100 (200 envs, one episode,
# sampled actions). 200 x 100 runners: the standard error of a fraction is below 1 point; the
# tolerance of 3 points also covers the spread between seeds.
@pytest.mark.parametrize("published,expected", [
    (("tagger",), 0.998),         # published taggers vs uniform-random runners
    (("runner",), 0.119),         # uniform-random taggers vs published runners
    ((), 0.78),                   # random vs random
    (("tagger", "runner"), 0.773),  # published vs published
])
def test_published_policies_reproduce_the_measured_tag_rates(tag_trainer, published, expected):
    fraction = _tagged_fraction(tag_trainer, published)
    print(f"published {published}: tagged fraction {fraction:.4f} (measured before: {expected})")
    assert abs(fraction - expected) < 0.03, (published, fraction, expected)


def test_tutorial_5_flow(tag_trainer, tmp_path):
    """2.7.1's tutorial 5: animation, train, load the published policies, animation, close."""
    from matplotlib import animation

    from example_envs.tag_continuous.generate_rollout_animation import generate_tag_env_rollout_animation

    trainer = tag_trainer
    anim = generate_tag_env_rollout_animation(trainer)
    assert isinstance(anim, animation.FuncAnimation)
    before = {k: v.detach().clone() for k, v in trainer.models["runner"].state_dict().items()}
    trainer.train(2)
    assert any(not torch.equal(before[k], v) for k, v in trainer.models["runner"].state_dict().items())
    folder = _pretrained_dir()
    trainer.load_model_checkpoint({tag: str(folder / f) for tag, f in FILES.items()})
    states, actions, rewards = trainer.fetch_episode_states(["loc_x", "loc_y", "still_in_the_game"],
                                                            include_rewards_actions=True, policy="runner")
    frames = np.isfinite(states["loc_x"]).all(1).sum()
    assert 2 <= frames <= trainer.env_wrapper.episode_length + 1
    assert actions.shape == (trainer.env_wrapper.episode_length, 100, 2) and rewards.shape[1] == 100
    gif = tmp_path / "published.gif"
    generate_tag_env_rollout_animation(trainer, fps=25).save(str(gif), writer=animation.PillowWriter(fps=25), dpi=30)
    assert gif.stat().st_size > 0
    paths = trainer.save_model_checkpoint(0)  # 2.7.1's names, CPU tensors: the published files round-trip
    for path in paths:
        tag = path.name.split("_")[0]
        assert path.name == FILES[tag]
        written = torch.load(path, weights_only=True)
        published = torch.load(folder / FILES[tag], map_location="cpu", weights_only=True)
        assert list(written) == list(published) and all(torch.equal(written[k], published[k]) for k in published)
