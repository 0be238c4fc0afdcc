"""A2C / PPO losses on fixed tensors vs hand loops; clip behaviour; PPO over several epochs."""

from __future__ import annotations

import math

import pytest
import torch

from warp_drive.config import PolicyConfig
from warp_drive.config.algorithms import algorithm_entry
from warp_drive.errors import UsageError
from warp_drive.training.algorithms import (
    A2C,
    PPO,
    a2c_loss,
    log_prob_and_entropy,
    ppo_loss,
    update_policy,
    value_loss,
)
from warp_drive.training.models import ActionSpec, FullyConnected

N = 10


@pytest.fixture
def fixed():
    g = torch.Generator().manual_seed(7)
    return {
        "log_prob": torch.randn(N, generator=g, dtype=torch.float64) - 1.0,
        "old_log_prob": torch.randn(N, generator=g, dtype=torch.float64) - 1.0,
        "entropy": torch.rand(N, generator=g, dtype=torch.float64),
        "values": torch.randn(N, generator=g, dtype=torch.float64),
        "advantages": torch.randn(N, generator=g, dtype=torch.float64),
        "targets": torch.randn(N, generator=g, dtype=torch.float64),
    }


def test_a2c_loss_matches_hand_loop(fixed):
    f = fixed
    loss, metrics = a2c_loss(
        f["log_prob"],
        f["entropy"],
        f["values"],
        f["advantages"],
        f["targets"],
        vf_loss_coeff=0.5,
        entropy_coeff=0.01,
    )
    pg = vf = ent = 0.0
    for i in range(N):
        pg += -float(f["log_prob"][i]) * float(f["advantages"][i]) / N
        vf += (float(f["values"][i]) - float(f["targets"][i])) ** 2 / N
        ent += float(f["entropy"][i]) / N
    assert loss.item() == pytest.approx(pg + 0.5 * vf - 0.01 * ent, rel=1e-12)
    assert metrics["policy_loss"].item() == pytest.approx(pg, rel=1e-12)
    assert metrics["value_loss"].item() == pytest.approx(vf, rel=1e-12)
    assert metrics["entropy"].item() == pytest.approx(ent, rel=1e-12)
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in metrics.values())


def test_a2c_normalized_advantage(fixed):
    f = fixed
    _, metrics = a2c_loss(
        f["log_prob"],
        f["entropy"],
        f["values"],
        f["advantages"],
        f["targets"],
        vf_loss_coeff=0.0,
        entropy_coeff=0.0,
        normalize_advantage=True,
    )
    adv = [float(a) for a in f["advantages"]]
    mean = sum(adv) / N
    std = math.sqrt(sum((a - mean) ** 2 for a in adv) / N)
    expected = -sum(float(lp) * (a - mean) / (std + 1e-8) for lp, a in zip(f["log_prob"], adv)) / N
    assert metrics["policy_loss"].item() == pytest.approx(expected, rel=1e-10)


def test_ppo_loss_matches_hand_loop(fixed):
    f, eps = fixed, 0.2
    loss, metrics = ppo_loss(
        f["log_prob"],
        f["old_log_prob"],
        f["entropy"],
        f["values"],
        f["advantages"],
        f["targets"],
        clip_param=eps,
        vf_loss_coeff=0.5,
        entropy_coeff=0.01,
    )
    pg = kl = clipped = 0.0
    for i in range(N):
        r = math.exp(float(f["log_prob"][i]) - float(f["old_log_prob"][i]))
        a = float(f["advantages"][i])
        pg += -min(r * a, min(max(r, 1 - eps), 1 + eps) * a) / N
        kl += ((r - 1) - math.log(r)) / N
        clipped += (abs(r - 1) > eps) / N
    vf = sum((float(v) - float(t)) ** 2 for v, t in zip(f["values"], f["targets"])) / N
    ent = float(f["entropy"].mean())
    assert loss.item() == pytest.approx(pg + 0.5 * vf - 0.01 * ent, rel=1e-12)
    assert metrics["policy_loss"].item() == pytest.approx(pg, rel=1e-12)
    assert metrics["approx_kl"].item() == pytest.approx(kl, rel=1e-12)
    assert metrics["clip_fraction"].item() == pytest.approx(clipped)
    assert 0 < clipped < 1  # the fixture exercises both branches


def test_ppo_clip_binds_zero_gradient_beyond_clip_range():
    eps = 0.2
    ratios = torch.tensor([1.5, 0.5, 1.5, 0.5, 1.05, 0.95], dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0, 1.0, -1.0], dtype=torch.float64)
    # Samples 0, 1: ratio beyond 1 +- eps in the direction the advantage rewards -> clipped.
    bound = torch.tensor([True, True, False, False, False, False])
    old = torch.zeros(6, dtype=torch.float64)
    log_prob = torch.log(ratios).requires_grad_(True)
    zeros = torch.zeros(6, dtype=torch.float64)
    loss, metrics = ppo_loss(
        log_prob,
        old,
        zeros,
        zeros,
        adv,
        zeros,
        clip_param=eps,
        vf_loss_coeff=0.0,
        entropy_coeff=0.0,
    )
    loss.backward()
    grad = log_prob.grad
    assert torch.all(grad[bound] == 0)
    assert torch.all(grad[~bound] != 0)
    # Unclipped samples: d(-r A / N)/d log_prob = -r A / N.
    torch.testing.assert_close(grad[~bound], (-ratios * adv / 6)[~bound])
    assert metrics["clip_fraction"].item() == pytest.approx(4 / 6)


def test_ppo_with_ratio_one_has_a2c_gradient(fixed):
    f = fixed
    lp_ppo = f["log_prob"].clone().requires_grad_(True)
    lp_a2c = f["log_prob"].clone().requires_grad_(True)
    common = dict(vf_loss_coeff=0.5, entropy_coeff=0.0)
    loss_ppo, _ = ppo_loss(
        lp_ppo,
        f["log_prob"],
        f["entropy"],
        f["values"],
        f["advantages"],
        f["targets"],
        clip_param=0.2,
        **common,
    )
    loss_a2c, _ = a2c_loss(
        lp_a2c, f["entropy"], f["values"], f["advantages"], f["targets"], **common
    )
    loss_ppo.backward()
    loss_a2c.backward()
    torch.testing.assert_close(lp_ppo.grad, lp_a2c.grad)


def test_value_clipping():
    targets = torch.tensor([1.0, 1.0])
    old = torch.tensor([0.0, 0.0])
    values = torch.tensor([0.5, -0.5], requires_grad=True)
    loss = value_loss(values, targets, old, vf_clip_param=0.2)
    # sample 0: clipped V = 0.2 -> (0.2-1)^2 = 0.64 > (0.5-1)^2 = 0.25 -> clipped term, no grad
    # sample 1: clipped V = -0.2 -> 1.44 < (-0.5-1)^2 = 2.25 -> unclipped term
    assert loss.item() == pytest.approx((0.64 + 2.25) / 2)
    loss.backward()
    assert values.grad[0].item() == 0.0
    assert values.grad[1].item() == pytest.approx(2 * (-0.5 - 1.0) / 2)
    with pytest.raises(UsageError, match="old_values"):
        value_loss(values, targets, None, vf_clip_param=0.2)


def test_log_prob_entropy_multi_discrete_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    p1 = torch.softmax(torch.randn(4, 3, 5, generator=g), -1)
    p2 = torch.softmax(torch.randn(4, 3, 2, generator=g), -1)
    actions = torch.stack(
        [torch.randint(0, 5, (4, 3), generator=g), torch.randint(0, 2, (4, 3), generator=g)], -1
    )
    lp, ent = log_prob_and_entropy([p1, p2], actions.int())
    d1, d2 = torch.distributions.Categorical(probs=p1), torch.distributions.Categorical(probs=p2)
    torch.testing.assert_close(lp, d1.log_prob(actions[..., 0]) + d2.log_prob(actions[..., 1]))
    torch.testing.assert_close(ent, d1.entropy() + d2.entropy())


def test_log_prob_entropy_gaussian_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    mean, std = torch.randn(4, 3, 2, generator=g), torch.rand(4, 3, 2, generator=g) + 0.1
    actions = torch.randn(4, 3, 2, generator=g)
    lp, ent = log_prob_and_entropy([(mean, std)], actions)
    normal = torch.distributions.Normal(mean, std)
    torch.testing.assert_close(lp, normal.log_prob(actions).sum(-1))
    torch.testing.assert_close(ent, normal.entropy().sum(-1))


def test_masked_probabilities_give_finite_entropy():
    probs = torch.tensor([[0.0, 0.25, 0.75]])
    lp, ent = log_prob_and_entropy([probs], torch.tensor([[2]]))
    assert torch.isfinite(ent).all()
    assert ent.item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), rel=1e-6)
    assert lp.item() == pytest.approx(math.log(0.75), rel=1e-6)


def test_scheduled_coefficients_are_reported_at_timestep():
    algo = A2C(vf_loss_coeff=[[0, 1.0], [100, 0.0]], entropy_coeff=0.1)
    probs = torch.full((2, 3, 4), 0.25)
    values = torch.zeros(2, 3)
    _, metrics = algo.compute_loss(
        [probs],
        values,
        torch.zeros(2, 3, 1, dtype=torch.int32),
        torch.ones(2, 3),
        torch.ones(2, 3),
        timestep=25,
    )
    assert metrics["vf_loss_coeff"].item() == pytest.approx(0.75)
    assert metrics["entropy_coeff"].item() == pytest.approx(0.1)


def test_return_normalization_denormalizes_values_and_normalizes_targets():
    torch.manual_seed(0)
    algo = A2C(gamma=0.9, normalize_return=True)
    rewards = 50.0 + 10.0 * torch.randn(8, 4, 2)
    adv, ret = algo.compute_advantages(
        rewards, torch.zeros(8, 4, 2), torch.zeros(4, 2), torch.zeros(8, 4)
    )
    vn = algo.value_normalizer
    assert vn.mean.item() == pytest.approx(ret.double().mean().item(), rel=1e-3)
    targets = algo.value_targets(ret)
    assert abs(targets.mean().item()) < 1e-2 and targets.std().item() == pytest.approx(
        1.0, rel=0.05
    )
    torch.testing.assert_close(algo.values_in_reward_units(targets), ret, rtol=1e-5, atol=1e-3)
    # values from the model are in normalized units: a value of 0 means the running mean
    _, ret2 = algo.compute_advantages(
        torch.zeros(1, 4, 2), torch.zeros(1, 4, 2), torch.zeros(4, 2), torch.ones(1, 4)
    )
    assert torch.all(ret2 == 0)


def test_ppo_needs_old_log_probs():
    with pytest.raises(UsageError, match="old_log_probs"):
        PPO().compute_loss(
            [torch.full((2, 3), 1 / 3)],
            torch.zeros(2),
            torch.zeros(2, 1),
            torch.ones(2),
            torch.ones(2),
            timestep=0,
        )


def _registry_loss(policy_config):
    """The loss object of a ``policy.<tag>`` section, by the class its registry entry's builder holds."""
    return algorithm_entry(policy_config.algorithm).policy_builder().loss.from_config(policy_config)


def test_the_registry_entry_builds_the_loss_from_the_policy_config():
    algo = _registry_loss(
        PolicyConfig.from_dict({"algorithm": "ppo", "clip_param": 0.1, "gae_lambda": 0.95})
    )
    assert isinstance(algo, PPO) and algo.clip_param == 0.1 and algo.gae_lambda == 0.95
    algo = _registry_loss(PolicyConfig.from_dict({"entropy_coeff": [[0, 0.5], [10, 0.05]]}))
    assert type(algo) is A2C and algo.entropy_coeff.get_param_value(5) == pytest.approx(0.275)


def _rollout(model, spec, b=6, e=5, a=3, obs_dim=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(b, e, a, obs_dim, generator=g)
    with torch.no_grad():
        heads, values = model(obs)
        actions = torch.stack(
            [
                torch.multinomial(p.reshape(-1, p.shape[-1]), 1, generator=g).reshape(b, e, a)
                for p in heads
            ],
            -1,
        )
        old_log_probs, _ = log_prob_and_entropy(heads, actions)
    rewards = torch.randn(b, e, a, generator=g)
    return obs, actions, rewards, values, old_log_probs


def test_ppo_ratio_moves_away_from_one_after_one_epoch():
    torch.manual_seed(0)
    spec = ActionSpec(categorical=(3, 4))
    model = FullyConnected(4, spec, (16,))
    algo = PPO(clip_param=0.1, gamma=0.9, gae_lambda=0.95)
    obs, actions, rewards, values, old_lp = _rollout(model, spec)
    adv, ret = algo.compute_advantages(rewards, values, torch.zeros(5, 3), torch.zeros(6, 5))
    batch = dict(
        obs=obs,
        actions=actions,
        advantages=adv,
        returns=ret,
        old_log_probs=old_lp,
        old_values=values,
    )
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    first = update_policy(model, opt, algo, batch, timestep=0, num_epochs=1, num_minibatches=1)
    assert first["mean_ratio"].item() == pytest.approx(1.0, abs=1e-6)  # first step: same policy
    assert first["clip_fraction"].item() == 0.0
    with torch.no_grad():
        heads, _ = model(obs)
        new_lp, _ = log_prob_and_entropy(heads, actions)
    ratio = torch.exp(new_lp - old_lp)
    assert (ratio - 1).abs().max().item() > 1e-3
    second = update_policy(model, opt, algo, batch, timestep=0, num_epochs=1, num_minibatches=3)
    assert second["approx_kl"].item() > 0
    assert second["clip_fraction"].item() > 0
    assert set(second) >= {
        "loss",
        "policy_loss",
        "value_loss",
        "entropy",
        "grad_norm",
        "explained_variance",
    }
    assert all(v.dim() == 0 and torch.isfinite(v) for v in second.values())


def test_update_policy_grad_norm_is_post_backward_total_norm():
    torch.manual_seed(1)
    model = FullyConnected(4, [3], (8,))
    algo = A2C()
    obs, actions, rewards, values, _ = _rollout(model, None)
    adv, ret = algo.compute_advantages(rewards, values, torch.zeros(5, 3), torch.zeros(6, 5))
    batch = dict(obs=obs, actions=actions, advantages=adv, returns=ret)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    metrics = update_policy(model, opt, algo, batch, timestep=0, max_grad_norm=None)
    expected = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters()))
    assert metrics["grad_norm"].item() == pytest.approx(expected.item(), rel=1e-5)
    update_policy(model, opt, algo, batch, timestep=0, max_grad_norm=1e-3)
    clipped = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters()))
    assert clipped.item() == pytest.approx(1e-3, rel=1e-3)
