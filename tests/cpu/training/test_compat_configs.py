"""2.7.1's run configs (written here from their documented values) load and train on the cpu backend;
OU-noise keys on A2C/PPO configs fail up front with a ConfigError (the DDPG configs: test_ddpg.py); the shipped 2.7.1-named configs and the
2.7.1 script entry points work."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from warp_drive.config import load_run_config, recursive_merge_config_dicts
from warp_drive.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


def _a2c(vf, ent, max_grad_norm, gamma, lr, fc):
    return {"to_train": True, "algorithm": "A2C", "vf_loss_coeff": vf, "entropy_coeff": ent, "clip_grad_norm": True,
            "max_grad_norm": max_grad_norm, "normalize_advantage": False, "normalize_return": False, "gamma": gamma,
            "lr": lr, "model": {"type": "fully_connected", "fc_dims": fc, "model_ckpt_filepath": ""}}


def _saving(name, log=100, save=5000):
    return {"metrics_log_freq": log, "model_params_save_freq": save, "basedir": "/tmp", "name": name, "tag": "experiments"}


TAG_ENV = {"num_taggers": 10, "num_runners": 100, "grid_length": 20.0, "episode_length": 500, "max_acceleration": 0.1,
           "min_acceleration": -0.1, "max_turn": 2.356, "min_turn": -2.356, "num_acceleration_levels": 20,
           "num_turn_levels": 20, "skill_level_runner": 1.0, "skill_level_tagger": 1.0, "max_speed": 1.0, "seed": 274880,
           "use_full_observation": False, "runner_exits_game_after_tagged": True, "num_other_agents_observed": 10,
           "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": -10.0, "step_penalty_for_tagger": 0.0,
           "step_reward_for_runner": 0.0, "edge_hit_penalty": 0.0, "end_of_game_reward_for_runner": 1.0,
           "tagging_distance": 0.02}
GRID_ENV = {"num_taggers": 4, "grid_length": 100, "episode_length": 100, "seed": 20, "wall_hit_penalty": 0.1,
            "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": 5.0, "step_cost_for_tagger": 0.01}


def _single(name, episode_length, pool, envs, episodes, batch, policy, **trainer):
    return {"name": name, "env": {"episode_length": episode_length, "reset_pool_size": pool},
            "trainer": {"num_envs": envs, "num_episodes": episodes, "train_batch_size": batch, "env_backend": "numba",
                        **trainer},
            "policy": {"shared": policy}, "saving": _saving(name)}


def _ddpg(name, episode_length, envs, episodes, lr, actor_extra, params, **trainer):
    policy = {"to_train": True, "algorithm": "DDPG", "clip_grad_norm": True, "max_grad_norm": 3,
              "normalize_advantage": False, "normalize_return": False, "gamma": 0.99, "tau": 0.05, "lr": lr,
              "model": {"actor": {"type": "fully_connected_actor", "fc_dims": [64, 64], **actor_extra},
                        "critic": {"type": "fully_connected_action_value_critic", "fc_dims": [64, 64]},
                        "model_ckpt_filepath": {"actor": "", "critic": ""}}}
    cfg = _single(name, episode_length, 10000, envs, episodes, 50000, policy, n_step=5, **trainer)
    cfg["sampler"] = {"params": params}
    return cfg


#: 2.7.1's run configs as its documentation describes them (YAML layout and values).
REFERENCE_CONFIGS = {
    "tag_continuous": {
        "name": "tag_continuous", "env": TAG_ENV,
        "trainer": {"num_envs": 100, "num_episodes": 500, "train_batch_size": 25000},
        "policy": {"runner": _a2c(1, 0.05, 0.5, 0.98, 0.005, [256, 256]), "tagger": _a2c(1, 0.05, 0.5, 0.98, 0.001, [256, 256])},
        "saving": _saving("tag_continuous")},
    "tag_gridworld": {
        "name": "tag_gridworld", "env": GRID_ENV,
        "trainer": {"num_envs": 2000, "num_episodes": 20000, "train_batch_size": 200000, "env_backend": "pycuda"},
        "policy": {"shared": _a2c(1, 0.05, 3, 0.98, 0.001, [32, 32])}, "saving": _saving("tag_gridworld")},
    "tag_gridworld_with_reset_pool": {
        "name": "tag_gridworld_with_reset_pool", "env": GRID_ENV,
        "trainer": {"num_envs": 2000, "num_episodes": 20000, "train_batch_size": 200000, "env_backend": "pycuda"},
        "policy": {"shared": _a2c(1, 0.05, 3, 0.98, 0.001, [32, 32])}, "saving": _saving("tag_gridworld")},
    "single_cartpole": _single("single_cartpole", 500, 1000, 100, 200000, 50000, _a2c(1, 0.05, 3, 0.99, 0.001, [32, 32])),
    "single_acrobot": _single("single_acrobot", 500, 1000, 100, 200000, 50000, _a2c(0.1, 0.1, 3, 0.99, 0.001, [32, 32])),
    "single_mountain_car": _single("single_mountain_car", 500, 10000, 1000, 2000000, 500000,
                                   _a2c(1, 0.05, 3, 0.99, 0.001, [32, 32]), neg_pos_env_ratio=10),
    "single_continuous_mountain_car": _ddpg("single_continuous_mountain_car", 1000, 10000, 1000000,
                                            {"actor": 0.001, "critic": 0.0001}, {},
                                            {"damping": 0.15, "stddev": 0.5, "scale": 1.0}, evaluator=True),
    "single_pendulum": _ddpg("single_pendulum", 500, 10000, 10000000,
                             {"actor": [[2500000000, 0.001], [3750000000, 0.0005]],
                              "critic": [[2500000000, 0.0001], [3750000000, 0.00005]]},
                             {"output_w": 2.0}, {"damping": 0.15, "stddev": 0.2, "scale": 1.0}),
}
DDPG_CONFIGS = ("single_continuous_mountain_car", "single_pendulum")
TRAINABLE = sorted(set(REFERENCE_CONFIGS) - set(DDPG_CONFIGS))


def _write(tmp_path, raw) -> Path:
    path = tmp_path / f"{raw['name']}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("name", TRAINABLE)
def test_reference_configs_load_with_their_semantics(tmp_path, name):
    cfg = load_run_config(_write(tmp_path, REFERENCE_CONFIGS[name]))
    # 2.7.1's configs keep their backend: its single-agent configs name numba (the envs' Numba steps)
    assert cfg.trainer.env_backend == REFERENCE_CONFIGS[name]["trainer"].get("env_backend", "pycuda")
    assert cfg.trainer.n_step == 1 and not cfg.trainer.evaluator
    assert cfg.trainer.neg_pos_env_ratio == (10 if name == "single_mountain_car" else -1)
    for tag, raw in REFERENCE_CONFIGS[name]["policy"].items():
        p = cfg.policy[tag]
        assert (p.algorithm, p.lr, p.gamma, p.model.fc_dims) == (raw["algorithm"], raw["lr"], raw["gamma"], tuple(raw["model"]["fc_dims"]))


@pytest.mark.parametrize("name", TRAINABLE)
def test_reference_configs_train_through_setup_trainer_and_train(tmp_path, name):
    """Each config, scaled down (few envs, short episodes, small layers), trains one iteration."""
    from warp_drive.training.scripts.example_training_script_pycuda import setup_trainer_and_train

    raw = copy.deepcopy(REFERENCE_CONFIGS[name])
    raw["env"]["episode_length"] = 10
    if "num_runners" in raw["env"]:
        raw["env"].update(num_runners=6, num_taggers=2, num_other_agents_observed=3)
    if "reset_pool_size" in raw["env"]:
        raw["env"]["reset_pool_size"] = 20
    raw["trainer"].update(num_envs=4, train_batch_size=40, num_episodes=4, seed=0)
    for policy in raw["policy"].values():
        policy["model"]["fc_dims"] = [8, 8]
    raw["saving"].update(basedir=str(tmp_path), metrics_log_freq=1)
    setup_trainer_and_train(raw, results_directory="run", verbose=False)
    run = tmp_path / raw["saving"]["name"] / "experiments" / "run"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["iteration"] == 1
    assert sorted(p.name for p in run.glob("*.state_dict")) == sorted(f"{t}_40.state_dict" for t in raw["policy"])


# the DDPG configs load and train: tests/cpu/training/test_ddpg.py


@pytest.mark.parametrize("section,value,match", [
    ("sampler", {"params": {"damping": 0.15}}, "Ornstein-Uhlenbeck"),
    ("sampler", {"params": {"stddev": [[0, 0.5], [10, 0.2]]}}, "noise of DDPG policies"),
    ("trainer", {"n_step": 5}, "trainer.n_step`=5"),
    ("trainer", {"evaluator": "yes"}, "trainer.evaluator"),
    ("trainer", {"env_backend": "tpu"}, "trainer.env_backend"),
])
def test_2_7_1_keys_without_a_counterpart_raise(section, value, match):
    raw = copy.deepcopy(REFERENCE_CONFIGS["single_cartpole"])
    raw.setdefault(section, {}).update(value)
    with pytest.raises(ConfigError, match=match):
        load_run_config(raw)


def test_model_keys_of_2_7_1():
    raw = copy.deepcopy(REFERENCE_CONFIGS["single_cartpole"])
    raw["policy"]["shared"]["model"].update(init_method="xavier", output_w=2.0, output_b=-0.5)
    raw["policy"]["shared"]["entropy_coeff"] = [[0, 0.5], [2000000, 0.05]]
    raw["policy"]["shared"]["vf_loss_coeff"] = [[0, 1.0], [100, 0.5]]
    raw["policy"]["shared"]["lr"] = [[0, 0.01], [1000, 0.001]]
    raw["trainer"]["evaluator"] = True
    cfg = load_run_config(raw)
    m = cfg.policy["shared"].model
    assert (m.init_method, m.output_w, m.output_b) == ("xavier", 2.0, -0.5)
    assert cfg.policy["shared"].entropy_coeff == ((0.0, 0.5), (2000000.0, 0.05)) and cfg.trainer.evaluator
    assert load_run_config(cfg.to_dict()) == cfg


def test_recursive_merge_config_dicts_fills_missing_keys_in_place():
    config = {"trainer": {"num_envs": 5}, "extra": 1}
    out = recursive_merge_config_dicts(config, {"trainer": {"num_envs": 10, "num_episodes": 7}, "saving": {"tag": "x"}})
    assert out is config and config == {"trainer": {"num_envs": 5, "num_episodes": 7}, "extra": 1, "saving": {"tag": "x"}}
    with pytest.raises(ConfigError, match="two dicts"):
        recursive_merge_config_dicts([], {})


# ----------------------------------------------------------------------------- shipped configs and scripts
SHIPPED_FROM = {
    "tag_continuous": "example_envs/tag_continuous/run_config.yaml",
    "tag_gridworld": "example_envs/tag_gridworld/run_config.yaml",
    "tag_gridworld_with_reset_pool": "example_envs/tag_gridworld/run_config_with_reset_pool.yaml",
    "single_cartpole": "example_envs/classic_control/cartpole/run_config.yaml",
    "single_acrobot": "example_envs/classic_control/acrobot/run_config.yaml",
    "single_mountain_car": "example_envs/classic_control/mountain_car/run_config.yaml",
    "single_continuous_mountain_car": "example_envs/classic_control/continuous_mountain_car/run_config.yaml",
    "single_pendulum": "example_envs/classic_control/pendulum/run_config.yaml",
}


#: this project's own shipped configs (2.7.1 had no SAC; the *_fast configs of benchmarks/bench_time_to_policy.py):
#: no example-folder twin
SHIPPED_HERE = ("single_continuous_mountain_car_sac", "single_pendulum_sac", "mappo_simple_spread", "ippo_simple_spread",
                "mappo_gru_simple_spread", "ippo_gru_simple_spread",
                *(f"single_{env}_fast" for env in ("cartpole", "acrobot", "mountain_car", "pendulum",
                                                   "continuous_mountain_car")))


def test_every_2_7_1_config_name_is_shipped_and_matches_its_example_config():
    from warp_drive.training.setup_and_train import env_class_for, run_config_names, run_config_path

    assert run_config_names() == sorted([*SHIPPED_FROM, *SHIPPED_HERE])
    for name in SHIPPED_HERE:
        shipped = load_run_config(run_config_path(name))
        assert shipped.name == name and shipped.saving.name == name and env_class_for(name)
    for name, source in SHIPPED_FROM.items():
        shipped = load_run_config(run_config_path(name))
        example = load_run_config(REPO / source)
        assert shipped.name == name and shipped.saving.name == name
        env_class_for(name)  # its env class resolves
        example_env = dict(example.env)
        if name in ("tag_continuous", "tag_gridworld"):  # the Tag examples start every episode fresh; 2.7.1's names keep its resets
            assert example_env.pop("fresh_start_states") is True and "fresh_start_states" not in shipped.env
        if name == "tag_continuous":  # the example carries this project's measured PPO defaults (issue 15);
            # the 2.7.1 name keeps 2.7.1's tutorial training settings
            assert dict(shipped.env) == example_env
            assert {p.algorithm for p in shipped.policy.values()} == {"A2C"} and shipped.trainer.num_envs == 100
            continue
        assert (dict(shipped.env), shipped.trainer, shipped.policy) == (example_env, example.trainer, example.policy), name
    with pytest.raises(ConfigError, match="did you mean 'single_cartpole'"):
        run_config_path("single_cartpol")


def test_script_main_trains_a_config_by_name(tmp_path, monkeypatch, capsys):
    from warp_drive.cli import setup_and_train  # the module whose run_config_path main() calls

    raw = yaml.safe_load(setup_and_train.run_config_path("single_cartpole").read_text())
    raw["env"].update(episode_length=10, reset_pool_size=20)
    raw["trainer"].update(num_envs=4, train_batch_size=40, num_episodes=8, seed=0)
    raw["saving"]["basedir"] = str(tmp_path)
    small = tmp_path / "single_cartpole.yaml"
    small.write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(setup_and_train, "run_config_path", lambda name: small)
    assert setup_and_train.main(["--env", "single_cartpole", "--results_dir", "cli"]) == 0
    assert "Training steps/s" in capsys.readouterr().out
    assert (tmp_path / "single_cartpole" / "experiments" / "cli" / "metrics.jsonl").is_file()


def test_script_module_runs_with_python_m():
    out = subprocess.run([sys.executable, "-m", "warp_drive.training.scripts.example_training_script_pycuda", "--help"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0 and "--num_gpus" in out.stdout and "--auto_scale" in out.stdout
