"""Reward normalization (``policy.<tag>.normalize_reward``): running discounted returns per env, their
variance, the scaled rewards the advantages see, and the state kept in checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from warp_drive.config import PolicyConfig
from warp_drive.training.algorithms import A2C, PPO, RewardNormalizer, compute_gae


def reference(rewards: np.ndarray, ends: np.ndarray, gamma: float) -> np.ndarray:
    """Running discounted return of each (env, agent) after each step, one step at a time."""
    ret = np.zeros(rewards.shape[1:])
    out = np.empty_like(rewards)
    for t in range(rewards.shape[0]):
        ret = gamma * ret + rewards[t]
        out[t] = ret
        ret = ret * (1.0 - ends[t])[:, None]
    return out


def test_running_returns_carry_over_rollouts_reset_at_episode_ends_and_scale_the_rewards():
    g = torch.Generator().manual_seed(0)
    norm = RewardNormalizer(gamma=0.9)
    rollouts = []
    for steps in (5, 7):
        rewards = torch.randn(steps, 3, 2, generator=g) * 4.0 - 1.0
        terminated = torch.rand(steps, 3, generator=g) < 0.2
        truncated = torch.rand(steps, 3, generator=g) < 0.2
        rollouts.append((rewards, terminated, truncated, norm(rewards, terminated, truncated)))
    rewards = torch.cat([r[0] for r in rollouts]).double().numpy()
    ends = torch.cat([(r[1] | r[2]) for r in rollouts]).double().numpy()
    running = reference(rewards, ends, 0.9).reshape(-1)
    n, c = running.size, 1e-4  # prior of weight 1e-4: mean 0, variance 1
    mean, var = running.mean(), running.var()
    expected_var = (c + n * var + mean**2 * c * n / (n + c)) / (n + c)
    assert norm.return_stats.var.item() == pytest.approx(expected_var, rel=1e-6)  # float32 returns
    assert norm.return_stats.count.item() == pytest.approx(n + c)
    last_rewards, _, _, scaled = rollouts[-1]
    torch.testing.assert_close(scaled, last_rewards / np.sqrt(expected_var + 1e-8))
    np.testing.assert_allclose(norm.returns.numpy(), reference(rewards, ends, 0.9)[-1] * (1 - ends[-1])[:, None],
                               rtol=1e-5)


def test_scaled_rewards_are_clipped_and_not_centred():
    norm = RewardNormalizer(gamma=0.99, clip=1.0)
    rewards = torch.tensor([[[3.0], [5.0]]])  # one step, two envs, one agent: returns 3 and 5, variance ~1
    scaled = norm(rewards, torch.zeros(1, 2, dtype=torch.bool))
    std = float(torch.sqrt(norm.return_stats.var + 1e-8))
    assert std == pytest.approx(1.0, rel=1e-3)
    torch.testing.assert_close(scaled, torch.ones(1, 2, 1))  # 3 / std and 5 / std, both clipped to 1
    norm = RewardNormalizer(gamma=0.99, clip=10.0)
    scaled = norm(rewards, torch.zeros(1, 2, dtype=torch.bool))
    torch.testing.assert_close(scaled, rewards / std)


def test_algorithm_computes_advantages_on_scaled_rewards_and_keeps_the_variance_in_its_state():
    g = torch.Generator().manual_seed(1)
    algo = A2C(gamma=0.95, gae_lambda=0.9, normalize_reward=True)
    shadow = RewardNormalizer(gamma=0.95)
    rewards = torch.randn(6, 4, 1, generator=g) * 10.0
    values = torch.randn(6, 4, 1, generator=g)
    last = torch.randn(4, 1, generator=g)
    terminated = torch.zeros(6, 4, dtype=torch.bool)
    terminated[2, 1] = True
    adv, ret = algo.compute_advantages(rewards, values, last, terminated)
    expected = compute_gae(shadow(rewards, terminated), values, last, terminated, gamma=0.95, gae_lambda=0.9)
    torch.testing.assert_close(adv, expected[0])
    torch.testing.assert_close(ret, expected[1])
    assert algo.running_statistics() == [None, algo.reward_normalizer.return_stats]
    state = algo.state_dict()
    assert set(state) == {"reward_normalizer"}
    assert set(state["reward_normalizer"]) == {"return_stats.mean", "return_stats.var", "return_stats.count"}
    fresh = A2C(gamma=0.95, normalize_reward=True)
    fresh.load_state_dict(state)
    assert fresh.reward_normalizer.return_stats.var.item() == algo.reward_normalizer.return_stats.var.item()
    assert fresh.reward_normalizer.returns is None  # episodes start afresh after a resume


def test_config_option_defaults_off_and_builds_the_normalizer_with_the_policy_gamma():
    assert PolicyConfig.from_dict({"algorithm": "PPO"}).normalize_reward is False
    assert PPO.from_config(PolicyConfig.from_dict({"algorithm": "PPO"})).reward_normalizer is None
    algo = PPO.from_config(PolicyConfig.from_dict({"algorithm": "PPO", "gamma": 0.9, "normalize_reward": True}))
    assert isinstance(algo.reward_normalizer, RewardNormalizer) and algo.reward_normalizer.gamma == 0.9
