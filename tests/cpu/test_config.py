"""Run config: reference YAMLs load unchanged, unknown keys and bad values raise ConfigError."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from warp_drive.config import (
    ModelConfig,
    PolicyConfig,
    RunConfig,
    SamplerConfig,
    SavingConfig,
    TrainerConfig,
    check_env_kwargs,
    load_run_config,
)
from warp_drive.config._yaml import load_defaults
from warp_drive.errors import ConfigError

# Same keys and values as the reference's run_configs/tag_continuous.yaml (section 4.1 / 3.1).
TAG_CONTINUOUS_YAML = """
# YAML configuration for the tag continuous environment
name: "tag_continuous"
# Environment settings
env:
    num_taggers: 10
    num_runners: 100
    grid_length: 20
    episode_length: 500
    max_acceleration: 0.1
    min_acceleration: -0.1
    max_turn: 2.35  # 3*pi/4 radians
    min_turn: -2.35  # -3*pi/4 radians
    num_acceleration_levels: 20
    num_turn_levels: 20
    skill_level_runner: 1
    skill_level_tagger: 1
    seed: 274880
    use_full_observation: False
    runner_exits_game_after_tagged: True
    num_other_agents_observed: 10
    tag_reward_for_tagger: 10.0
    tag_penalty_for_runner: -10.0
    step_penalty_for_tagger: -0.00
    step_reward_for_runner: 0.00
    edge_hit_penalty: -0.0
    end_of_game_reward_for_runner: 1.0
    tagging_distance: 0.02
# Trainer settings
trainer:
    num_envs: 100 # number of environment replicas
    num_episodes: 500 # number of episodes to run the training for
    train_batch_size: 25000 # total batch size used for training per iteration (across all envs)
# Policy network settings
policy: # list all the policies below
    runner:
        to_train: True # flag indicating whether the model needs to be trained
        algorithm: "A2C" # algorithm used to train the policy
        vf_loss_coeff: 1 # loss coefficient schedule for the value function loss
        entropy_coeff: 0.05 # loss coefficient schedule for the entropy loss
        clip_grad_norm: True # flag indicating whether to clip the gradient norm or not
        max_grad_norm: 0.5 # when clip_grad_norm is True, the clip level
        normalize_advantage: False # flag indicating whether to normalize advantage or not
        normalize_return: False # flag indicating whether to normalize return or not
        gamma: 0.98 # discount factor
        lr: 0.005 # learning rate
        model: # policy model settings
            type: "fully_connected" # model type
            fc_dims: [256, 256] # dimension(s) of the fully connected layers as a list
            model_ckpt_filepath: "" # filepath (used to restore a previously saved model)
    tagger:
        to_train: True
        algorithm: "A2C"
        vf_loss_coeff: 1
        entropy_coeff: 0.05
        clip_grad_norm: True
        max_grad_norm: 0.5
        normalize_advantage: False
        normalize_return: False
        gamma: 0.98
        lr: 0.001
        model:
            type: "fully_connected"
            fc_dims: [256, 256]
            model_ckpt_filepath: ""
# Checkpoint saving setting
saving:
    metrics_log_freq: 100 # how often (in iterations) to log (and print) the metrics
    model_params_save_freq: 5000 # how often (in iterations) to save the model parameters
    basedir: "/tmp" # base folder used for saving
    name: "tag_continuous" # base folder used for saving
    tag: "experiments" # experiment name
"""

# Same keys and values as the reference's run_configs/tag_gridworld.yaml (section 4.1 / 3.2).
TAG_GRIDWORLD_YAML = """
# YAML configuration for the tag gridworld environment
name: "tag_gridworld"
# Environment settings
env:
    num_taggers: 4
    grid_length: 100
    episode_length: 100
    seed: 20
    wall_hit_penalty: 0.1
    tag_reward_for_tagger: 10.0
    tag_penalty_for_runner: 5.0
    step_cost_for_tagger: 0.01
# Trainer settings
trainer:
    num_envs: 2000 # number of environment replicas
    num_episodes: 20000 # number of episodes to run the training for
    train_batch_size: 200000 # total batch size used for training per iteration (across all envs)
    env_backend: "pycuda" # environment backend, pycuda or numba
# Policy network settings
policy: # list all the policies below
    shared:
        to_train: True # flag indicating whether the model needs to be trained
        algorithm: "A2C" # algorithm used to train the policy
        vf_loss_coeff: 1 # loss coefficient schedule for the value function loss
        entropy_coeff: 0.05 # loss coefficient schedule for the entropy loss
        clip_grad_norm: True # flag indicating whether to clip the gradient norm or not
        max_grad_norm: 3 # when clip_grad_norm is True, the clip level
        normalize_advantage: False # flag indicating whether to normalize advantage or not
        normalize_return: False # flag indicating whether to normalize return or not
        gamma: 0.98 # discount factor
        lr: 0.001 # learning rate
        model: # policy model settings
            type: "fully_connected" # model type
            fc_dims: [32, 32] # dimension(s) of the fully connected layers as a list
            model_ckpt_filepath: "" # filepath (used to restore a previously saved model)
# Checkpoint saving setting
saving:
    metrics_log_freq: 100 # how often (in iterations) to log (and print) the metrics
    model_params_save_freq: 5000 # how often (in iterations) to save the model parameters
    basedir: "/tmp" # base folder used for saving
    name: "tag_gridworld" # base folder used for saving
    tag: "experiments" # experiment name
"""


def _minimal(**sections):
    raw = {"policy": {"shared": {"to_train": True}}}
    raw.update(sections)
    return raw


@pytest.fixture
def tag_continuous_path(tmp_path):
    path = tmp_path / "tag_continuous.yaml"
    path.write_text(TAG_CONTINUOUS_YAML)
    return path


def test_reference_tag_continuous_yaml_loads_unchanged(tag_continuous_path):
    cfg = load_run_config(tag_continuous_path)
    assert cfg.name == "tag_continuous"
    assert cfg.env["num_runners"] == 100 and cfg.env["use_full_observation"] is False
    t = cfg.trainer
    assert (t.num_envs, t.num_episodes, t.train_batch_size) == (100, 500, 25000)
    assert t.batch_size_per_env == 250
    assert t.num_gpus == 1 and t.env_backend == "pycuda" and t.seed is None  # defaults
    assert t.num_iterations(cfg.env["episode_length"]) == 10
    assert cfg.policy_tags == ("runner", "tagger") and cfg.policies_to_train == ("runner", "tagger")
    runner, tagger = cfg.policy["runner"], cfg.policy["tagger"]
    assert runner.algorithm == "A2C" and runner.vf_loss_coeff == 1.0 and runner.lr == 0.005
    assert tagger.lr == 0.001 and tagger.model.fc_dims == (256, 256)
    assert runner.num_epochs == 1 and runner.num_minibatches == 1 and runner.gae_lambda == 1.0
    assert runner.model.model_ckpt_filepath == ""
    s = cfg.saving
    assert (s.metrics_log_freq, s.model_params_save_freq, s.basedir, s.name, s.tag) == (
        100,
        5000,
        "/tmp",
        "tag_continuous",
        "experiments",
    )
    assert cfg.sampler.use_argmax is False


def test_reference_tag_gridworld_yaml_loads_unchanged(tmp_path):
    path = tmp_path / "tag_gridworld.yaml"
    path.write_text(TAG_GRIDWORLD_YAML)
    cfg = load_run_config(str(path))
    assert cfg.trainer.batch_size_per_env == 100
    assert cfg.trainer.num_iterations(100) == 10
    shared = cfg.policy["shared"]
    assert shared.max_grad_norm == 3.0 and shared.model.fc_dims == (32, 32) and shared.lr == 0.001
    assert cfg.saving.name == "tag_gridworld"


def test_round_trip(tag_continuous_path):
    cfg = load_run_config(
        tag_continuous_path, ["policy.runner.entropy_coeff=[[0, 0.5], [2000000, 0.05]]"]
    )
    plain = cfg.to_dict()
    assert plain["policy"]["runner"]["entropy_coeff"] == [[0.0, 0.5], [2000000.0, 0.05]]
    assert RunConfig.from_dict(plain) == cfg
    assert load_run_config(plain) == cfg


def test_config_is_frozen(tag_continuous_path):
    cfg = load_run_config(tag_continuous_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.trainer.num_envs = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        cfg.trainer.batch_size_per_env = 3  # type: ignore[misc]


def test_defaults_yaml_matches_dataclass_fields():
    d = load_defaults()
    names = lambda cls: {f.name for f in dataclasses.fields(cls)}  # noqa: E731
    assert set(d) == names(RunConfig)
    assert set(d["trainer"]) == names(TrainerConfig) - {"algorithm_params"}  # DDPG's n_step: its entry parses it
    assert set(d["policy"]) == names(PolicyConfig)
    assert set(d["policy"]["model"]) == names(ModelConfig)
    assert set(d["saving"]) == names(SavingConfig)
    assert set(d["sampler"]["params"]) == names(SamplerConfig) - {"ou_noise"}  # DDPG's: config.ddpg.OU_DEFAULTS
    t = TrainerConfig.from_dict({})
    assert (t.num_gpus, t.num_envs, t.num_episodes, t.train_batch_size) == (1, 10, 10000, 10000)
    p = PolicyConfig.from_dict({})
    assert (p.to_train, p.algorithm, p.gamma, p.lr, p.vf_loss_coeff, p.entropy_coeff) == (
        False,
        "A2C",
        0.98,
        0.0001,
        0.01,
        0.05,
    )
    assert p.model.fc_dims == (64, 64) and p.model.type == "fully_connected"


@pytest.mark.parametrize(
    "raw,key,suggestion",
    [
        (_minimal(trainer={"num_env": 10}), "trainer.num_env", "trainer.num_envs"),
        (
            _minimal(saving={"metric_log_freq": 5}),
            "saving.metric_log_freq",
            "saving.metrics_log_freq",
        ),
        (
            {"policy": {"shared": {"learning_rate": 0.1, "to_train": True}}},
            "policy.shared.learning_rate",
            None,
        ),
        ({"policy": {"p": {"gama": 0.9}}}, "policy.p.gama", "policy.p.gamma"),
        (
            {"policy": {"p": {"model": {"fc_dim": [3]}}}},
            "policy.p.model.fc_dim",
            "policy.p.model.fc_dims",
        ),
        (_minimal(polcy={}), "polcy", "policy"),
        (
            _minimal(sampler={"params": {"use_argmx": True}}),
            "sampler.params.use_argmx",
            "sampler.params.use_argmax",
        ),
    ],
)
def test_unknown_key_did_you_mean(raw, key, suggestion):
    with pytest.raises(ConfigError) as info:
        load_run_config(raw)
    msg = str(info.value)
    assert f"unknown key `{key}`" in msg
    if suggestion:
        assert f"did you mean `{suggestion}`?" in msg


BAD_VALUES = [
    ("trainer.num_envs", 0),
    ("trainer.num_envs", 2.5),
    ("trainer.train_batch_size", 1005),  # not a multiple of num_envs = 10
    ("trainer.num_episodes", -1),
    ("trainer.num_gpus", True),
    ("trainer.env_backend", "numba_gpu"),
    ("trainer.seed", -3),
    ("policy.shared.gamma", 0.0),
    ("policy.shared.gamma", 1.5),
    ("policy.shared.gae_lambda", 1.1),
    ("policy.shared.gae_lambda", -0.1),
    ("policy.shared.algorithm", "TRPO"),  # not a registered algorithm
    ("policy.shared.lr", 0),
    ("policy.shared.lr", -1e-3),
    ("policy.shared.lr", [[100, 0.1], [0, 0.2]]),
    ("policy.shared.lr", [[0, -0.1]]),
    ("policy.shared.lr", []),
    ("policy.shared.lr", "fast"),
    ("policy.shared.entropy_coeff", -0.1),
    ("policy.shared.vf_loss_coeff", [[0, 1.0], [10]]),
    ("policy.shared.clip_param", 0),
    ("policy.shared.vf_clip_param", -1.0),
    ("policy.shared.num_minibatches", 3),  # does not divide 10000
    ("policy.shared.num_minibatches", 0),
    ("policy.shared.num_epochs", 0),
    ("policy.shared.max_grad_norm", 0),
    ("policy.shared.to_train", "yes"),
    ("policy.shared.model.fc_dims", [64, 0]),
    ("policy.shared.model.fc_dims", [64, 1.5]),
    ("policy.shared.model.fc_dims", 64),
    ("policy.shared.model.init_method", "kaiming"),
    ("saving.metrics_log_freq", 0),
    ("saving.basedir", 3),
    ("sampler.params.use_argmax", 1),
]


@pytest.mark.parametrize("key,value", BAD_VALUES, ids=[f"{k}={v!r}" for k, v in BAD_VALUES])
def test_impossible_value_raises_config_error_naming_key(key, value):
    raw = _minimal()
    node = raw
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    with pytest.raises(ConfigError) as info:
        load_run_config(raw)
    assert f"`{key}" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_zero_iterations_is_refused():
    with pytest.raises(ConfigError, match="num_episodes"):
        load_run_config(_minimal(env={"episode_length": 10}, trainer={"num_episodes": 5}))
    with pytest.raises(ConfigError, match="num_episodes"):
        TrainerConfig.from_dict({"num_episodes": 1}).num_iterations(100)
    # episode_length * num_episodes >= train_batch_size is otherwise not required per episode
    cfg = load_run_config(_minimal(env={"episode_length": 10}, trainer={"num_episodes": 1000}))
    assert cfg.trainer.num_iterations(10) == 1


def test_no_policies_is_refused():
    with pytest.raises(ConfigError, match="policy"):
        load_run_config({"policy": {}})


def test_algorithm_case_insensitive_and_epoch_defaults(caplog):
    cfg = load_run_config({"policy": {"a": {"algorithm": "ppo"}, "b": {"algorithm": "a2c"}}})
    assert cfg.policy["a"].algorithm == "PPO" and cfg.policy["a"].num_epochs == 4
    assert cfg.policy["b"].algorithm == "A2C" and cfg.policy["b"].num_epochs == 1
    with caplog.at_level(logging.WARNING, logger="warp_drive.config.schema"):
        load_run_config({"policy": {"a": {"algorithm": "PPO", "num_epochs": 1, "to_train": True}}})
    assert "clip never binds" in caplog.text


def test_overrides(tag_continuous_path):
    cfg = load_run_config(
        tag_continuous_path,
        overrides=[
            "trainer.num_envs=500",
            "trainer.train_batch_size=50000",
            "policy.runner.lr=1e-3",
            "policy.tagger.algorithm=PPO",
            "policy.tagger.num_minibatches=4",
            "policy.runner.model.fc_dims=[32, 16]",
            "policy.runner.model.kwargs.anything=2",
            "env.num_runners=20",
            "env.new_env_key=true",
            "saving.tag=run 1",
            "sampler.params.use_argmax=true",
            "trainer.seed=null",
        ],
    )
    assert cfg.trainer.num_envs == 500 and cfg.trainer.batch_size_per_env == 100
    assert cfg.policy["runner"].lr == 0.001 and isinstance(cfg.policy["runner"].lr, float)
    assert cfg.policy["tagger"].algorithm == "PPO" and cfg.policy["tagger"].num_minibatches == 4
    assert cfg.policy["runner"].model.fc_dims == (32, 16)
    assert cfg.policy["runner"].model.kwargs == {"anything": 2}
    assert cfg.env["num_runners"] == 20 and cfg.env["new_env_key"] is True
    assert cfg.saving.tag == "run 1" and cfg.sampler.use_argmax is True


def test_overrides_do_not_modify_input_dict():
    raw = _minimal()
    load_run_config(raw, ["trainer.num_envs=20"])
    assert "trainer" not in raw


@pytest.mark.parametrize(
    "override,needle",
    [
        ("trainer.num_env=5", "did you mean `trainer.num_envs`?"),
        ("policy.shard.lr=0.1", "did you mean `policy.shared`?"),
        ("policy.shared.model.fc_dim=[3]", "did you mean `policy.shared.model.fc_dims`?"),
        ("trainr.num_envs=5", "did you mean `trainer`?"),
        ("trainer.num_envs", "no '='"),
        ("trainer..num_envs=3", "empty key"),
        ("trainer.num_envs.x=3", "is a value, not a section"),
    ],
)
def test_bad_overrides(override, needle):
    with pytest.raises(ConfigError) as info:
        load_run_config(_minimal(), [override])
    assert needle in str(info.value)


def test_override_value_validated():
    with pytest.raises(ConfigError, match="`trainer.num_envs`"):
        load_run_config(_minimal(), ["trainer.num_envs=-4"])


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_run_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_run_config(bad)
    notmap = tmp_path / "list.yaml"
    notmap.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_run_config(notmap)


def test_scientific_notation_is_a_number(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("policy:\n  p:\n    lr: 1e-3\n    entropy_coeff: [[0, 5E-1], [1e6, 5e-2]]\n")
    cfg = load_run_config(path)
    assert cfg.policy["p"].lr == 0.001
    assert cfg.policy["p"].entropy_coeff == ((0.0, 0.5), (1e6, 0.05))


class FakeEnv:
    def __init__(self, num_taggers, num_runners=10, grid_length=10.0, env_backend="cpu"):
        pass


class FakeEnvWithKwargs:
    def __init__(self, num_taggers=1, **kwargs):
        pass


def test_check_env_kwargs():
    check_env_kwargs(FakeEnv, {"num_taggers": 2, "grid_length": 3.0})
    check_env_kwargs(FakeEnvWithKwargs, {"anything": 1})
    with pytest.raises(ConfigError) as info:
        check_env_kwargs(FakeEnv, {"num_taggers": 2, "num_runner": 3})
    assert "unknown key `env.num_runner`" in str(info.value)
    assert "did you mean `env.num_runners`?" in str(info.value)
    with pytest.raises(ConfigError, match="env.num_taggers"):
        check_env_kwargs(FakeEnv, {"num_runners": 3})
    with pytest.raises(ConfigError, match="set by the trainer"):
        check_env_kwargs(
            FakeEnv, {"num_taggers": 2, "env_backend": "cpu"}, supplied_by_caller=("env_backend",)
        )


def test_overrides_reach_the_keys_of_each_policys_algorithm():
    """``policy.<tag>.*`` overrides are checked against that policy's algorithm (its section class's
    DEFAULTS), so DDPG's and SAC's own keys and networks can be set from the command line."""
    base = {"name": "single_pendulum", "env": {"episode_length": 200},
            "trainer": {"num_envs": 4, "train_batch_size": 40, "num_episodes": 10, "env_backend": "cpu"},
            "saving": {}}
    sac = load_run_config({**base, "policy": {"shared": {"algorithm": "SAC", "to_train": True}}},
                          ["policy.shared.buffer_size=5000", "policy.shared.model.actor.fc_dims=[32,32]"])
    assert sac.policy["shared"].buffer_size == 5000 and sac.policy["shared"].model.actor.fc_dims == (32, 32)
    ddpg = load_run_config({**base, "policy": {"shared": {"algorithm": "DDPG", "to_train": True}}},
                           ["policy.shared.tau=0.01", "policy.shared.model.critic.fc_dims=[16]"])
    assert ddpg.policy["shared"].tau == 0.01 and ddpg.policy["shared"].model.critic.fc_dims == (16,)
    with pytest.raises(ConfigError, match="did you mean `policy.shared.buffer_size`"):
        load_run_config({**base, "policy": {"shared": {"algorithm": "SAC"}}}, ["policy.shared.bufer_size=1"])
    with pytest.raises(ConfigError, match="policy.shared.tau"):  # not a key of an A2C/PPO policy
        load_run_config({**base, "policy": {"shared": {"algorithm": "PPO"}}}, ["policy.shared.tau=0.1"])
