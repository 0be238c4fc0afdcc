"""The Trainer's WarpDrive 2.7.1 API on the cpu backend: constructor order, run directory,
checkpoint files, fetch_episode_states, evaluate_episodes, evaluator and env down-sampling."""

from __future__ import annotations

import inspect
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataNotFoundError
from warp_drive.training.trainer import Trainer

GOAL, T, E, N = 6.0, 20, 16, 4


def _config(tmp_path, iters=2, **trainer):
    pol = {"to_train": True, "algorithm": "A2C", "lr": 0.01, "gamma": 0.9, "model": {"fc_dims": [16, 16]}}
    return {"name": "toy", "trainer": {"num_envs": E, "train_batch_size": E * T, "num_episodes": E * iters,
                                       "env_backend": "cpu", "seed": 5, **trainer},
            "policy": {"a": dict(pol), "b": dict(pol)},
            "saving": {"metrics_log_freq": 1, "model_params_save_freq": 3, "basedir": str(tmp_path), "name": "toy", "tag": "t"}}


def _wrapper():
    return EnvWrapper(ToyLine(num_agents=N, episode_length=T, goal=GOAL), num_envs=E, env_backend="cpu")


PMAP = {"a": [3, 1], "b": [0, 2]}


def test_constructor_takes_2_7_1_arguments_in_order_and_extras_by_keyword():
    params = list(inspect.signature(Trainer.__init__).parameters.values())[1:]
    assert [p.name for p in params[:9]] == [
        "env_wrapper", "config", "policy_tag_to_agent_id_map", "create_separate_placeholders_for_each_policy",
        "obs_dim_corresponding_to_num_agents", "num_devices", "device_id", "results_dir", "verbose"]
    assert [p.default for p in params[3:9]] == [False, "first", 1, 0, None, True]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[9:])
    assert {"model_factory", "rank", "tensorboard"} <= {p.name for p in params[9:]}


def test_positional_call_and_2_7_1_run_directory(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path), PMAP, False, "first", 1, 0, "run7", False)
    assert t.save_dir == tmp_path / "toy" / "t" / "run7"  # basedir/name/tag/results_dir
    assert t.rank == 0 and t.device_id == 0
    absolute = tmp_path / "elsewhere"
    assert Trainer(_wrapper(), _config(tmp_path), PMAP, results_dir=str(absolute), verbose=False).save_dir == absolute
    default = Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False).save_dir
    assert default.parent == tmp_path / "toy" / "t" and default.name.split(".")[0].isdigit()  # unix time first
    assert Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False).save_dir != default  # unique per run


def test_2_7_1_attribute_names(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False)
    assert t.cuda_envs is t.env_wrapper and t.num_envs == E and t.training_batch_size == E * T
    assert t.training_batch_size_per_env == T and t.num_iters == 2 and t.num_episodes == 2 * E
    assert list(t.policies) == ["a", "b"] and t.policies_to_train == ["a", "b"]
    assert t.models["a"] is t.policies["a"].model and t.current_timestep == {"a": 0, "b": 0}
    assert t.policy_tag_to_agent_id_map == PMAP


@pytest.mark.parametrize("kwargs,match", [
    ({"create_separate_placeholders_for_each_policy": True}, "shared placeholders"),
    ({"create_separate_placeholders_for_each_policy": "yes"}, "True or False"),
    ({"obs_dim_corresponding_to_num_agents": "middle"}, "'first'"),
])
def test_placeholder_arguments_are_checked(tmp_path, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False, **kwargs)


def test_obs_agent_axis_last_is_checked_against_the_placeholder(tmp_path):
    # ToyLine's observations are (E, N, 1): read as "last" the agent axis has size 1, not 2 agents
    with pytest.raises(ConfigError, match="obs_dim_corresponding_to_num_agents='first'"):
        Trainer(_wrapper(), _config(tmp_path), PMAP, obs_dim_corresponding_to_num_agents="last", verbose=False)


def test_policy_obs_reads_agent_last_placeholders_agent_first():
    from warp_drive.training.network_inputs import own_observations as policy_obs  # Policy.observe's default

    obs = torch.arange(2 * 3 * 5, dtype=torch.float32).reshape(2, 3, 5)  # (E, features, N)
    dm = SimpleNamespace(data_on_device_via_torch=lambda name: obs)
    idx = torch.tensor([4, 1])
    policy = SimpleNamespace(obs_agents_last=True, select=lambda x: x.index_select(1, idx))
    got = policy_obs(dm, policy, ["observations"])
    assert got.shape == (2, 2, 3)
    torch.testing.assert_close(got[:, 0], obs[:, :, 4])
    torch.testing.assert_close(got[:, 1], obs[:, :, 1])


def test_save_and_load_model_checkpoint_2_7_1_files(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path, iters=4), PMAP, results_dir="run", verbose=False)
    assert t.save_model_checkpoint(1) == []  # 1 % 3 != 0 and not the last iteration (3)
    t.train(1)
    paths = t.save_model_checkpoint(3)  # the last iteration saves
    timestep = E * T
    assert sorted(p.name for p in paths) == [f"a_{timestep}.state_dict", f"b_{timestep}.state_dict"]
    state = torch.load(paths[0], weights_only=True)
    assert list(state)[:2] == ["fc.0.0.weight", "fc.0.0.bias"] and "vf_head.bias" in state  # 2.7.1's names
    assert (t.save_dir / "run_config.json").is_file()
    assert json.loads((t.save_dir / "run_config.json").read_text().splitlines()[0])["name"] == "toy"

    fresh = Trainer(_wrapper(), _config(tmp_path, iters=4), PMAP, results_dir="fresh", verbose=False)
    fresh.load_model_checkpoint({"a": str(paths[0])})
    assert fresh.current_timestep == {"a": timestep, "b": 0}  # parsed from the file name
    for p1, p2 in zip(t.policies["a"].model.parameters(), fresh.policies["a"].model.parameters()):
        torch.testing.assert_close(p1, p2)

    cfg = _config(tmp_path, iters=4)
    cfg["policy"]["b"]["model"]["model_ckpt_filepath"] = str(paths[1])
    from_config = Trainer(_wrapper(), cfg, PMAP, results_dir="cfg", verbose=False)  # loaded at construction
    assert from_config.current_timestep["b"] == timestep
    for p1, p2 in zip(t.policies["b"].model.parameters(), from_config.policies["b"].model.parameters()):
        torch.testing.assert_close(p1, p2)


def test_load_model_checkpoint_errors(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False)
    with pytest.raises(ConfigError, match="unknown policy 'c'"):
        t.load_model_checkpoint({"c": "x.state_dict"})
    with pytest.raises(ConfigError, match="does not exist"):
        t.load_model_checkpoint({"a": str(tmp_path / "missing_5.state_dict")})
    wrong = tmp_path / "wrong_7.state_dict"
    torch.save({"fc.0.0.weight": torch.zeros(3, 3), "fc.0.0.bias": torch.zeros(3),
                "policy_head.0.weight": torch.zeros(3, 3), "policy_head.0.bias": torch.zeros(3),
                "vf_head.weight": torch.zeros(1, 3), "vf_head.bias": torch.zeros(1)}, wrong)
    with pytest.raises(ConfigError, match="does not fit policy 'a'"):
        t.load_model_checkpoint({"a": str(wrong)})
    pickled = tmp_path / "object_1.state_dict"
    torch.save({"weights": SimpleNamespace(x=1)}, pickled)
    with pytest.raises(ConfigError, match="not a plain state_dict"):
        t.load_model_checkpoint({"a": str(pickled)})
    assert t.current_timestep == {"a": 0, "b": 0}


def test_evaluate_episodes_returns_per_agent_sums_with_the_final_reward(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False)
    rewards, steps = t.evaluate_episodes(use_argmax=True)
    assert rewards["a"].shape == (E, 2) and rewards["b"].shape == (E, 2) and steps["a"].shape == (E,)
    assert (steps["a"] == T).all()  # greedy untrained policies do not finish early
    ours = t.evaluate(deterministic=True, num_episodes=1, fresh_starts=False)  # same episodes, averaged over agents
    np.testing.assert_allclose(rewards["a"].mean(1), ours["a"]["episode_return"], rtol=1e-5)
    np.testing.assert_allclose(rewards["b"].mean(1), ours["b"]["episode_return"], rtol=1e-5)
    # every reward of the episode counts: with greedy actions episode t's states are reproducible
    states, actions, rews = t.fetch_episode_states(["x"], env_id=3, include_rewards_actions=True, use_argmax=True)
    np.testing.assert_allclose(rews.sum(0)[[3, 1]], rewards["a"][3], rtol=1e-5)
    with pytest.raises(ConfigError, match="OU exploration"):
        t.evaluate_episodes(scale=0)
    with pytest.raises(ConfigError, match="unknown sample parameter"):
        t.evaluate_episodes(temperature=2)


def test_fetch_episode_states_layout_and_dynamics(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False)
    states = t.fetch_episode_states(["x", "_timestep_"], env_id=5)
    assert set(states) == {"x", "_timestep_"} and states["x"].shape == (T + 1, N)
    assert states["x"].dtype == np.float64 and not np.isnan(states["x"]).any()  # episode of exactly T steps
    np.testing.assert_array_equal(states["_timestep_"], np.arange(T + 1))
    np.testing.assert_allclose(states["x"][0], ToyLine(num_agents=N).x0())

    s, a, r, p = t.fetch_episode_states(["x"], env_id=5, include_rewards_actions=True, include_probabilities=True)
    assert a.shape == (T, N, 1) and a.dtype == np.int32 and r.shape == (T, N) and r.dtype == np.float32
    x = s["x"]
    np.testing.assert_allclose(x[1:], np.clip(x[:-1] + a[..., 0] - 1, 0, 10))  # s_{t+1} from s_t and a_t
    np.testing.assert_allclose(r, -np.abs(x[1:] - GOAL), rtol=1e-6)  # r_{t+1}
    assert sorted(p) == list(range(T)) and set(p[0]) == {"a", "b"}
    assert p[0]["a"][0].shape == (2, 3) and np.allclose(p[0]["a"][0].sum(-1), 1, atol=1e-5)

    s, a, r = t.fetch_episode_states(["x"], include_rewards_actions=True, policy="a")
    assert a.shape == (T, 2, 1) and r.shape == (T, 2)
    np.testing.assert_allclose(r, -np.abs(s["x"][1:, [3, 1]] - GOAL), rtol=1e-6)
    s, p = t.fetch_episode_states(["x"], include_probabilities=True, policy="b")
    assert set(p[0]) == {"b"}


def test_fetch_episode_states_stops_at_the_episode_end(tmp_path):
    w = EnvWrapper(ToyLine(num_agents=N, episode_length=T, goal=0.0), num_envs=E, env_backend="cpu")
    t = Trainer(w, _config(tmp_path), PMAP, verbose=False)
    for p in t.policies.values():  # always action 0 (move left): every agent reaches x = 0
        torch.nn.init.zeros_(p.model.policy_heads[0].weight)
        with torch.no_grad():
            p.model.policy_heads[0].bias.copy_(torch.tensor([5.0, 0.0, 0.0]))
    s, a, r = t.fetch_episode_states(["x"], env_id=0, include_rewards_actions=True, use_argmax=True)
    # x0 = 0, 0.5, 1, 1.5 -> 0, 0, 0, 0.5 -> all 0: the episode ends at step 1; row 2 is its final state
    assert not np.isnan(s["x"][:3]).any() and np.isnan(s["x"][3:]).all()
    np.testing.assert_allclose(s["x"][1], [0, 0, 0, 0.5])
    np.testing.assert_allclose(s["x"][2], 0.0)
    assert (a[2:] == 0).all() and (r[2:] == 0).all() and (r[:2] != 0).any()


def test_fetch_episode_states_errors(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path), PMAP, verbose=False)
    with pytest.raises(ConfigError, match="env_id=16"):
        t.fetch_episode_states(["x"], env_id=16)
    with pytest.raises(DataNotFoundError, match="'loc_z' is not on the device"):
        t.fetch_episode_states(["loc_z"])
    with pytest.raises(ConfigError, match="without the env axis"):
        t.fetch_episode_states(["goal"])
    with pytest.raises(ConfigError, match="policy='c'"):
        t.fetch_episode_states(["x"], include_rewards_actions=True, policy="c")
    with pytest.raises(ConfigError, match="list of data names"):
        t.fetch_episode_states("x")


def test_training_continues_after_fetch_and_perf_stats(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path, iters=3), PMAP, results_dir="run", verbose=False)
    t.train(1)
    t.fetch_episode_states(["x"])
    t.train()
    assert t.iteration == 3
    stats = t.perf_stats
    assert stats.iters == 3 and stats.steps == 3 * E * T and stats.total_time > 0
    report = stats.get_perf_stats()
    assert report["Mean steps per sec (total)"] > 0 and report["Mean policy eval time per iter (ms)"] > 0
    t.graceful_close()


def test_evaluator_logs_test_episode_metrics(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path, evaluator=True), PMAP, results_dir="run", verbose=False)
    metrics = t.train()
    assert np.isfinite(metrics["a/test_episode_return_mean"]) and metrics["b/test_episode_length_mean"] == T


def test_neg_pos_env_ratio_keeps_successful_envs_and_samples_the_others(tmp_path):
    from warp_drive.training.engine.env_subset import env_subset

    cfg = _config(tmp_path, neg_pos_env_ratio=1.5)
    t = Trainer(_wrapper(), cfg, PMAP, verbose=False)
    t.env_wrapper.reset_all_envs()
    t.generate_rollout()
    rows = [(t.steps_per_iter * p.num_agents, p.config.num_minibatches) for p in t.policies.values()]
    assert env_subset(t.rollout.shared.envs_ending(2), 1.5, rows, t.generator) is None  # no success (_done_ == 2): every env
    t.rollout.shared.done[5, [2, 9]] = 2
    envs = env_subset(t.rollout.shared.envs_ending(2), 1.5, rows, t.generator)
    assert envs.tolist() == sorted(envs.tolist()) and {2, 9} <= set(envs.tolist())
    assert len(envs) == 2 + 3  # positives + int(2 * 1.5) others
    before = [p.detach().clone() for p in t.policies["a"].model.parameters()]
    t.update()
    assert any(not torch.equal(a, b) for a, b in zip(before, t.policies["a"].model.parameters()))
