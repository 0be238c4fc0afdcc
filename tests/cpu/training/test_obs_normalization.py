"""Observation normalization (``model.kwargs.normalize_obs``): running statistics, the model's use of
them, when the policy update moves them, and the files a policy with them is saved in."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from warp_drive.compat271.reference_format import to_reference_state_dict
from warp_drive.errors import ConfigError
from warp_drive.training.algorithms import PPO, ObsNormalizer, log_prob_and_entropy, update_policy
from warp_drive.training.run.checkpoint import policy_file_state
from warp_drive.training.models import ActionSpec, FullyConnected


def test_running_statistics_equal_those_of_all_batches_pooled():
    g = torch.Generator().manual_seed(0)
    norm = ObsNormalizer(3)
    batches = [torch.randn(n, 2, 3, generator=g) * torch.tensor([1.0, 0.01, 50.0]) + 4.0 for n in (5, 17, 1)]
    for b in batches:
        norm.update(b)
    pooled = torch.cat([b.reshape(-1, 3) for b in batches]).double().numpy()
    n, c = len(pooled), 1e-4  # the statistics start as a prior of weight 1e-4: mean 0, variance 1
    mean, var = pooled.mean(0), pooled.var(0)
    np.testing.assert_allclose(norm.mean.numpy(), n * mean / (n + c), rtol=1e-9)
    np.testing.assert_allclose(norm.var.numpy(), (c + n * var + mean**2 * c * n / (n + c)) / (n + c), rtol=1e-9)
    assert norm.count.item() == pytest.approx(n + c)
    x = torch.from_numpy(pooled).float()
    z = norm(x)
    assert z.dtype == torch.float32
    expected = (pooled - norm.mean.numpy()) / np.sqrt(norm.var.numpy() + 1e-8)
    np.testing.assert_allclose(z.numpy(), expected, atol=1e-4)
    np.testing.assert_allclose(z.double().mean(0).numpy(), 0.0, atol=1e-3)


def test_normalized_values_are_clipped_and_fresh_statistics_are_the_identity():
    norm = ObsNormalizer(2)
    x = torch.tensor([[0.5, -3.0], [40.0, -40.0]])
    torch.testing.assert_close(norm(x), torch.tensor([[0.5, -3.0], [10.0, -10.0]]))


def test_model_without_the_option_is_unchanged_and_with_it_normalizes_its_input():
    torch.manual_seed(0)
    plain = FullyConnected(3, ActionSpec(categorical=(2,)), (8,))
    assert plain.obs_normalizer is None and not any("normalizer" in k for k in plain.state_dict())
    model = FullyConnected(3, ActionSpec(categorical=(2,)), (8,), normalize_obs=True)
    model.load_state_dict({**plain.state_dict(), **{f"obs_normalizer.{k}": v for k, v in ObsNormalizer(3).state_dict().items()}})
    obs = torch.randn(4, 5, 3) * 20 + 7
    model.update_obs_normalizer(obs)
    heads, values = model(obs)
    plain_heads, plain_values = plain(model.obs_normalizer(obs))
    torch.testing.assert_close(values, plain_values)
    torch.testing.assert_close(heads[0], plain_heads[0])
    plain.update_obs_normalizer(obs)  # a no-op without the option
    with pytest.raises(ConfigError, match="normalize_obs"):
        FullyConnected(3, [2], (8,), normalize_obs="yes")


def test_policy_update_moves_the_statistics_once_after_its_gradient_steps():
    """The gradient step sees the rollout's statistics (PPO ratio exactly 1 on the first step, which
    an update of the statistics before the step would break); afterwards they hold the batch's."""
    torch.manual_seed(0)
    model = FullyConnected(4, ActionSpec(categorical=(3,)), (16,), normalize_obs=True)
    obs = torch.randn(6, 5, 1, 4) * 3 + 2
    with torch.no_grad():
        heads, values = model(obs)
        actions = torch.multinomial(heads[0].reshape(-1, 3), 1).reshape(6, 5, 1, 1)
        old_lp, _ = log_prob_and_entropy(heads, actions)
    algo = PPO(gamma=0.9, gae_lambda=0.95)
    adv, ret = algo.compute_advantages(torch.randn(6, 5, 1), values, torch.zeros(5, 1), torch.zeros(6, 5))
    batch = {"obs": obs, "actions": actions, "advantages": adv, "returns": ret, "old_log_probs": old_lp}
    metrics = update_policy(model, torch.optim.Adam(model.parameters(), lr=0.01), algo, batch, timestep=0)
    assert metrics["mean_ratio"].item() == pytest.approx(1.0, abs=1e-6)
    pooled = obs.reshape(-1, 4).double()
    np.testing.assert_allclose(model.obs_normalizer.mean.numpy(), pooled.mean(0).numpy(), rtol=1e-4)
    assert model.obs_normalizer.count.item() == pytest.approx(30, abs=1e-3)


def test_policy_files_of_a_normalizing_model_keep_its_own_names():
    model = FullyConnected(4, [3], (8,), normalize_obs=True)
    state = policy_file_state(model)
    assert "obs_normalizer.mean" in state and "trunk.0.weight" in state
    FullyConnected(4, [3], (8,), normalize_obs=True).load_state_dict(state)
    with pytest.raises(ConfigError, match="normalizes its observations"):
        to_reference_state_dict(model)
    assert "vf_head.weight" in policy_file_state(FullyConnected(4, [3], (8,)))  # 2.7.1's names as before
