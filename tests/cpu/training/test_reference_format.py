"""2.7.1's saved fully connected policies: its parameter names map exactly onto our FullyConnected,
both ways, and its published Tag policies load and compute what their raw tensors compute."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from warp_drive.compat271.reference_format import (
    from_reference_state_dict,
    is_reference_state_dict,
    to_reference_state_dict,
)
from warp_drive.errors import ConfigError
from warp_drive.training.checkpoint_files import load_state_dict_file
from warp_drive.training.models.action_spec import ActionSpec
from warp_drive.training.models.fully_connected import FullyConnected

REPO = Path(__file__).resolve().parents[3]
PUBLISHED = ("tagger_1000010000.state_dict", "runner_1000010000.state_dict")


class ReferenceLayoutModel(nn.Module):
    """A fully connected actor-critic laid out the way 2.7.1 names its parameters (written here
    from its documented structure): ``fc`` a ModuleDict of Sequential(Linear, ReLU), one Linear per
    categorical head followed by softmax, and a Linear value head."""

    def __init__(self, obs_size, fc_dims, heads):
        super().__init__()
        self.fc = nn.ModuleDict()
        widths = [obs_size, *fc_dims]
        for i in range(len(fc_dims)):
            self.fc[str(i)] = nn.Sequential(nn.Linear(widths[i], widths[i + 1]), nn.ReLU())
        self.policy_head = nn.ModuleList(nn.Linear(fc_dims[-1], n) for n in heads)
        self.vf_head = nn.Linear(fc_dims[-1], 1)

    def forward(self, obs):
        h = obs
        for i in range(len(self.fc)):
            h = self.fc[str(i)](h)
        return [torch.softmax(head(h), dim=-1) for head in self.policy_head], self.vf_head(h)[..., 0]


def _assert_same_outputs(ours, ref, obs):
    probs_a, values_a = ours(obs)
    probs_b, values_b = ref(obs)
    for a, b in zip(probs_a, probs_b, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(values_a, values_b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fc_dims,heads", [((32, 16), (5,)), ((8, 8, 8), (11, 11)), ((4,), (3, 2, 7))])
def test_reference_state_dict_maps_exactly_both_ways(fc_dims, heads):
    torch.manual_seed(0)
    obs = torch.randn(6, 3, 9)
    ref = ReferenceLayoutModel(9, fc_dims, heads)
    ours = FullyConnected(9, ActionSpec(categorical=heads), fc_dims)
    assert is_reference_state_dict(ref.state_dict()) and not is_reference_state_dict(ours.state_dict())
    ours.load_state_dict(ref.state_dict())  # 2.7.1 -> ours, recognised by the names
    _assert_same_outputs(ours, ref, obs)

    torch.manual_seed(1)
    trained = FullyConnected(9, ActionSpec(categorical=heads), fc_dims)
    written = to_reference_state_dict(trained)
    assert list(written) == list(ReferenceLayoutModel(9, fc_dims, heads).state_dict())  # 2.7.1's keys, in its order
    back = ReferenceLayoutModel(9, fc_dims, heads)
    back.load_state_dict(written, strict=True)  # ours -> 2.7.1
    _assert_same_outputs(trained, back, obs)


def test_ddp_prefixes_are_accepted():
    ref = ReferenceLayoutModel(5, (4,), (3,))
    prefixed = {f"module.{k}": v for k, v in ref.state_dict().items()}
    assert is_reference_state_dict(prefixed)
    ours = FullyConnected(5, ActionSpec(categorical=(3,)), (4,))
    ours.load_state_dict(prefixed)
    _assert_same_outputs(ours, ref, torch.randn(2, 5))


def test_formats_without_a_counterpart_raise_config_error():
    box_head = {"fc.0.0.weight": torch.zeros(4, 5), "fc.0.0.bias": torch.zeros(4), "policy_head.weight": torch.zeros(2, 4),
                "policy_head.bias": torch.zeros(2), "vf_head.weight": torch.zeros(1, 4), "vf_head.bias": torch.zeros(1)}
    with pytest.raises(ConfigError, match="deterministic head for Box actions"):
        from_reference_state_dict(box_head)
    gaussian = FullyConnected(5, ActionSpec(gaussian_dim=2), (4,))
    with pytest.raises(ConfigError, match="Gaussian head"):
        to_reference_state_dict(gaussian)
    from warp_drive.training.run.checkpoint import policy_file_state

    assert "log_std" in policy_file_state(gaussian)  # written under its own names instead


def test_bounded_gaussian_mean_follows_output_w_and_output_b():
    torch.manual_seed(0)
    model = FullyConnected(3, ActionSpec(gaussian_dim=2), (8,), action_scale=2.0, action_bias=0.5)
    [(mean, std)], _ = model(torch.randn(100, 3) * 50)
    assert (mean >= -1.5).all() and (mean <= 2.5).all() and (std > 0).all()
    with pytest.raises(ConfigError, match="output_w"):
        FullyConnected(3, ActionSpec(categorical=(2,)), (8,), action_scale=2.0)


# ----------------------------------------------------------------------------- published policies
def _pretrained_dir() -> Path:
    candidates = [os.environ.get("WARP_DRIVE_PRETRAINED_DIR"), REPO.parent / "shared/device/anchor/pretrained",
                  REPO / ".device/anchor/pretrained"]
    for c in candidates:
        if c and all((Path(c) / f).is_file() for f in (*PUBLISHED, "run_config.yaml")):
            return Path(c)
    pytest.skip("2.7.1's published Tag policies are not here: set $WARP_DRIVE_PRETRAINED_DIR to the folder with "
                "tagger_1000010000.state_dict, runner_1000010000.state_dict and run_config.yaml")


def _direct(raw, obs):
    """What 2.7.1's model computes, straight from the stored tensors."""
    h = obs
    i = 0
    while f"fc.{i}.0.weight" in raw:
        h = torch.relu(h @ raw[f"fc.{i}.0.weight"].T + raw[f"fc.{i}.0.bias"])
        i += 1
    probs = []
    k = 0
    while f"policy_head.{k}.weight" in raw:
        probs.append(torch.softmax(h @ raw[f"policy_head.{k}.weight"].T + raw[f"policy_head.{k}.bias"], -1))
        k += 1
    return probs, (h @ raw["vf_head.weight"].T + raw["vf_head.bias"])[..., 0]


@pytest.mark.parametrize("filename", PUBLISHED)
def test_published_policy_computes_what_its_tensors_compute(filename):
    from warp_drive.config import load_run_config
    from warp_drive.training.models.factory import ModelFactory

    folder = _pretrained_dir()
    config = load_run_config(folder / "run_config.yaml")
    tag = filename.split("_")[0]
    model = ModelFactory().build(config.policy[tag].model, (71,), ActionSpec(categorical=(11, 11)))
    raw = load_state_dict_file(folder / filename)
    assert is_reference_state_dict(raw)
    model.load_state_dict(raw)
    obs = torch.randn(50, 71, generator=torch.Generator().manual_seed(0)) * 2
    with torch.no_grad():
        probs, values = model(obs)
        want_probs, want_values = _direct(raw, obs)
    for a, b in zip(probs, want_probs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-5)  # float32 sums in another order
    torch.testing.assert_close(values, want_values, rtol=1e-4, atol=1e-4)
    written = to_reference_state_dict(model)
    assert list(written) == list(raw) and all(torch.equal(written[k], raw[k]) for k in raw)  # round trip


def test_published_policies_load_into_a_trainer_from_their_run_config(tmp_path):
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.config._yaml import yaml_loads
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    folder = _pretrained_dir()
    raw_config = yaml_loads((folder / "run_config.yaml").read_text())
    raw_config["trainer"].update(num_envs=2, train_batch_size=20, seed=1)
    raw_config["saving"]["basedir"] = str(tmp_path)
    raw_config["policy"]["tagger"]["model"]["model_ckpt_filepath"] = str(folder / PUBLISHED[0])  # via the config
    env = TagContinuous(**raw_config["env"])
    wrapper = EnvWrapper(env, num_envs=2, env_backend="cpu")
    pmap = {"tagger": list(env.taggers), "runner": list(env.runners)}
    trainer = Trainer(wrapper, raw_config, pmap, verbose=False)
    trainer.load_model_checkpoint({"runner": str(folder / PUBLISHED[1])})  # and through the 2.7.1 call
    assert trainer.current_timestep == {"tagger": 1000010000, "runner": 1000010000}
    obs = wrapper.cuda_data_manager.data_on_device_via_torch("observations")
    for tag, filename in zip(("tagger", "runner"), PUBLISHED):
        raw = load_state_dict_file(folder / filename)
        x = obs[:, pmap[tag]]
        with torch.no_grad():
            probs, values = trainer.policies[tag].model(x)
            want_probs, want_values = _direct(raw, x)
        for a, b in zip(probs, want_probs, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=2e-5)  # float32 sums in another order
        torch.testing.assert_close(values, want_values, rtol=1e-4, atol=1e-4)
    rewards, _ = trainer.evaluate_episodes()
    assert np.isfinite(rewards["runner"]).all()
