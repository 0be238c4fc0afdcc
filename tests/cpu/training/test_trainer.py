"""Trainer on the CPU backend: agent mapping, rollout buffers, learning, checkpoints, evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.training.trainer import Trainer


def _config(tmp_path, algorithm="PPO", iters=30, two_policies=True, second="A2C", **trainer):
    pol = {"to_train": True, "algorithm": algorithm, "lr": 0.01, "vf_loss_coeff": 0.5, "entropy_coeff": 0.05,
           "gamma": 0.9, "num_minibatches": 4, "model": {"fc_dims": [32, 32]}}
    policy = {"a": dict(pol), "b": dict(pol, algorithm=second)} if two_policies else {"shared": pol}
    return {"name": "toy", "trainer": {"num_envs": 16, "train_batch_size": 16 * 20, "num_episodes": 16 * iters,
                                       "env_backend": "cpu", "seed": 3, **trainer},
            "policy": policy, "saving": {"metrics_log_freq": 10, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}


def _wrapper():
    return EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=16, env_backend="cpu")


def test_policy_map_validation(tmp_path):
    w = _wrapper()
    with pytest.raises(ConfigError, match="mapped to both"):
        Trainer(w, _config(tmp_path), {"a": [0, 1], "b": [1, 2, 3]}, verbose=False)
    with pytest.raises(ConfigError, match=r"agents \[3\] are not mapped"):
        Trainer(w, _config(tmp_path), {"a": [0, 1], "b": [2]}, verbose=False)
    with pytest.raises(ConfigError, match="same"):
        Trainer(w, _config(tmp_path), {"x": [0, 1], "b": [2, 3]}, verbose=False)


def test_out_of_order_agents_get_their_own_actions_and_rewards(tmp_path):
    """Policy 'a' owns agents [3, 1]: its row 0 must be agent 3 in obs, actions and rewards."""
    w = _wrapper()
    t = Trainer(w, _config(tmp_path), {"a": [3, 1], "b": [0, 2]}, verbose=False)
    t.env_wrapper.reset_all_envs()
    t.generate_rollout()
    dm = w.cuda_data_manager
    a = t.policies["a"].buffers
    # agent 3 starts at x = 1.5 and agent 1 at x = 0.5 (obs = x / 10)
    np.testing.assert_allclose(a.obs[0, :, 0, 0].numpy(), 0.15, rtol=1e-6)
    np.testing.assert_allclose(a.obs[0, :, 1, 0].numpy(), 0.05, rtol=1e-6)
    # the env applied policy a's sampled actions to agents 3 and 1: x after step 0 = x0 + action - 1
    x1 = a.obs[1, :, :, 0].numpy() * 10
    expected = np.clip(np.array([1.5, 0.5]) + a.actions[0, :, :, 0].numpy() - 1, 0, 10)
    np.testing.assert_allclose(x1, expected, rtol=1e-5)
    np.testing.assert_allclose(a.rewards[0].numpy(), -np.abs(expected - 6.0), rtol=1e-5)
    full = dm.pull_data_from_device("sampled_actions")[:, :, 0]
    np.testing.assert_array_equal(full[:, [3, 1]], a.actions[-1, :, :, 0].numpy())


def test_time_limit_is_truncation_with_bootstrap_values(tmp_path):
    w = _wrapper()
    t = Trainer(w, _config(tmp_path), {"a": [3, 1], "b": [0, 2]}, verbose=False)
    t.env_wrapper.reset_all_envs()
    t.generate_rollout()
    b = t.policies["b"].buffers
    assert b.truncated[-1].all() and not b.truncated[:-1].any()  # T = 20 = rollout length
    assert not b.terminated.any()
    assert torch.isfinite(b.next_values).all() and (b.next_values[-1] != 0).any()


def test_ppo_learns_to_reach_the_goal_and_beats_random(tmp_path):
    """Optimal greedy return is -12.5 per agent; a random policy gets about -80."""
    t = Trainer(_wrapper(), _config(tmp_path, iters=40, second="PPO"), {"a": [3, 1], "b": [0, 2]}, verbose=False)
    random_like = {k: v["episode_return"].mean() for k, v in t.evaluate(deterministic=False).items()}
    t.train()
    after = {k: v["episode_return"].mean() for k, v in t.evaluate().items()}
    for tag in ("a", "b"):
        assert after[tag] > random_like[tag] + 30, (random_like, after)
    assert (tmp_path / "default" / "experiment").is_dir()


def test_checkpoint_resume_restores_everything(tmp_path):
    t1 = Trainer(_wrapper(), _config(tmp_path, iters=4), {"a": [3, 1], "b": [0, 2]}, verbose=False, results_dir=str(tmp_path / "r1"))
    t1.train(2)
    path = t1.save_checkpoint()
    t1.train(2)
    t2 = Trainer(_wrapper(), _config(tmp_path, iters=4), {"a": [3, 1], "b": [0, 2]}, verbose=False, results_dir=str(tmp_path / "r2"))
    t2.load_checkpoint(path)
    assert t2.iteration == 2 and t2.policies["a"].timestep == t1.policies["a"].timestep - 2 * 320
    t2.train(2)
    for tag in ("a", "b"):
        for p1, p2 in zip(t1.policies[tag].model.parameters(), t2.policies[tag].model.parameters()):
            torch.testing.assert_close(p1, p2)  # identical continuation
    with pytest.raises(ConfigError, match="does not exist"):
        t2.load_checkpoint(tmp_path / "nope.pt")


def test_metrics_files_written(tmp_path):
    t = Trainer(_wrapper(), _config(tmp_path, iters=10, two_policies=False), None, verbose=False, results_dir=str(tmp_path / "run"))
    m = t.train()
    assert np.isfinite(m["shared/loss"]) and m["perf/env_steps_per_s"] > 0
    assert (tmp_path / "run" / "metrics.jsonl").is_file() and (tmp_path / "run" / "metrics.csv").is_file()
    assert any((tmp_path / "run").glob("shared_*.state_dict"))


def test_episode_stats_from_batches_match_a_step_loop():
    from warp_drive.training.policy_state import EpisodeStats

    rng = np.random.default_rng(0)
    E, A = 5, 3
    fast = EpisodeStats.create(E, A, torch.device("cpu"))
    ret_sum = len_sum = count = 0.0
    running, length = np.zeros(E), np.zeros(E)
    for B in (7, 1, 12, 4):
        rewards = rng.normal(size=(B, E, A)).astype(np.float32)
        done = rng.random((B, E)) < 0.3
        fast.update_from_batch(torch.from_numpy(rewards), torch.from_numpy(done))
        for t in range(B):  # the straightforward reference
            running += rewards[t].mean(1)
            length += 1
            for e in np.flatnonzero(done[t]):
                ret_sum += running[e]
                len_sum += length[e]
                count += 1
                running[e] = length[e] = 0
    out = fast.pop()
    assert out["episodes"].item() == count
    assert out["episode_return_mean"].item() == pytest.approx(ret_sum / count, rel=1e-5)
    assert out["episode_length_mean"].item() == pytest.approx(len_sum / count, rel=1e-6)
