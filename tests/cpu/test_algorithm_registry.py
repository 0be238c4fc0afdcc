"""The one algorithm registry (issue 38 item 1): a new algorithm that reuses the A2C/PPO section
parses (no recursion), and every ``policy.<tag>`` section is parsed by its entry's section class."""

from __future__ import annotations

import pytest

from warp_drive.config import RunConfig
from warp_drive.config import algorithms as registry
from warp_drive.errors import ConfigError


@pytest.fixture
def clean_registry():
    saved = dict(registry._REGISTRY)
    yield registry
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def _run(algorithm: str) -> dict:
    return {"trainer": {"num_envs": 2, "train_batch_size": 8, "num_episodes": 4},
            "env": {"episode_length": 4}, "policy": {"shared": {"algorithm": algorithm, "to_train": True}}}


def test_a_new_algorithm_reusing_the_actor_critic_section_parses(clean_registry):
    """Before issue 38 this recursed forever: the A2C/PPO section class handed any other name back to
    the registry, whose entry named the same class."""
    ac = clean_registry.algorithm_entry("PPO")
    clean_registry.register_algorithm(registry.AlgorithmEntry("MYPPO", section=ac.section, policy=ac.policy))
    cfg = RunConfig.from_dict(_run("myppo"))
    section = cfg.policy["shared"]
    assert section.algorithm == "MYPPO" and section.num_epochs == 1
    assert RunConfig.from_dict(cfg.to_dict()) == cfg


def test_each_section_is_parsed_by_its_entry():
    for name, cls_name in (("A2C", "ActorCriticConfig"), ("PPO", "ActorCriticConfig"), ("MAPPO", "MAPPOConfig"),
                           ("DDPG", "DDPGPolicyConfig"), ("SAC", "SACPolicyConfig")):
        cfg = RunConfig.from_dict(_run(name))
        section = cfg.policy["shared"]
        assert type(section).__name__ == cls_name and section.algorithm == name
        assert RunConfig.from_dict(cfg.to_dict()) == cfg


def test_an_unknown_algorithm_names_the_registered_ones():
    with pytest.raises(ConfigError, match="A2C, PPO, MAPPO, DDPG, SAC"):
        RunConfig.from_dict(_run("PPQ"))
