"""SAC's squashed Gaussian actor: shapes, the tanh log-density against numeric checks, stability at
saturation, greedy draws, Box scaling, the factory entry and its config errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from warp_drive.config.model import ModelConfig
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.models.action_spec import ActionSpec
from warp_drive.training.models.factory import ModelFactory
from warp_drive.training.models.squashed_gaussian import (
    ActionBounds,
    SquashedGaussianActor,
    log_one_minus_tanh_squared,
    squashed_log_prob,
    squashed_sample,
)


def _actor(obs=3, d=2, **kw):
    torch.manual_seed(0)
    return SquashedGaussianActor((obs,), ActionSpec(gaussian_dim=d), (32, 32), **kw)


@pytest.mark.parametrize("lead", [(5,), (4, 3), (2, 4, 3)])
def test_outputs_have_the_leading_shape_of_the_observations(lead):
    mean, log_std = _actor()(torch.randn(*lead, 3))
    assert mean.shape == log_std.shape == (*lead, 2)


def test_log_std_is_clamped():
    actor = _actor(log_std_min=-1.0, log_std_max=0.5)
    with torch.no_grad():
        actor.log_std_head.bias.fill_(100.0)
    assert torch.all(actor(torch.randn(7, 3))[1] == 0.5)
    with pytest.raises(ConfigError, match="log_std_min"):
        _actor(log_std_min=1.0, log_std_max=0.0)


def test_log_prob_is_the_change_of_variables_density_checked_by_finite_differences():
    """log p(tanh u) = log N(u) - log |d tanh / du|, the derivative taken numerically (float64)."""
    mean = torch.tensor([[0.3, -1.2]], dtype=torch.float64)
    log_std = torch.tensor([[-0.5, 0.4]], dtype=torch.float64)
    u = torch.tensor([[0.1, 2.5], [-3.0, -0.7], [1.9, 0.0]], dtype=torch.float64)
    h = 1e-6
    dydu = (torch.tanh(u + h) - torch.tanh(u - h)) / (2 * h)
    normal = torch.distributions.Normal(mean, log_std.exp())
    expected = (normal.log_prob(u) - torch.log(dydu)).sum(-1)
    torch.testing.assert_close(squashed_log_prob(u, mean, log_std), expected, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("mean,log_std", [(0.0, 0.0), (1.5, -1.0), (-0.4, 1.5)])
def test_density_integrates_to_one_in_the_unit_box_and_in_env_units(mean, log_std):
    """The density of y in (-1, 1), and of a = bias + scale * y in (low, high), integrates to 1."""
    u = torch.linspace(-25, 25, 400_001, dtype=torch.float64)[:, None]  # integrate over u: dy = tanh'(u) du
    m, s = torch.full_like(u, mean), torch.full_like(u, log_std)
    log_p = squashed_log_prob(u, m, s)
    dy = torch.exp(log_one_minus_tanh_squared(u[:, 0]))
    total = torch.trapezoid(torch.exp(log_p) * dy, u[:, 0])
    assert abs(float(total) - 1.0) < 1e-6
    bounds = ActionBounds.from_space(spaces.Box(-2.0, 3.0, (1,), np.float32))
    a = bounds.to_env(torch.tanh(u).float()).double()[:, 0]
    log_pa = log_p - bounds.log_det().double()
    total_a = torch.trapezoid(torch.exp(log_pa) * dy * bounds.scale.double(), u[:, 0])
    assert abs(float(total_a) - 1.0) < 1e-6 and float(a.min()) >= -2.0 and float(a.max()) <= 3.0


def test_monte_carlo_entropy_matches_the_integral():
    """-E[log p(y)] over many reparameterized draws equals the density's entropy by quadrature."""
    g = torch.Generator().manual_seed(1)
    mean, log_std = torch.full((200_000, 1), 0.8), torch.full((200_000, 1), -0.3)
    y, log_p = squashed_sample(mean, log_std, g)
    assert torch.all(y.abs() <= 1)
    u = torch.linspace(-12, 12, 200_001, dtype=torch.float64)[:, None]
    lp = squashed_log_prob(u, torch.full_like(u, 0.8), torch.full_like(u, -0.3))
    dy = torch.exp(log_one_minus_tanh_squared(u[:, 0]))
    entropy = -torch.trapezoid(torch.exp(lp) * lp * dy, u[:, 0])
    assert abs(float(-log_p.mean()) - float(entropy)) < 0.01


def test_saturated_draws_keep_finite_log_probs():
    u = torch.tensor([[30.0], [-30.0], [9.0]])
    lp = squashed_log_prob(u, torch.zeros_like(u), torch.zeros_like(u))
    assert torch.all(torch.isfinite(lp))
    # log(1 - tanh(u)^2) -> log 4 - 2|u| for large |u|
    torch.testing.assert_close(log_one_minus_tanh_squared(u[:2, 0]), torch.tensor([math.log(4) - 60.0] * 2))


def test_greedy_is_tanh_of_the_mean_and_draws_follow_the_generator():
    mean, log_std = torch.randn(6, 2), torch.randn(6, 2).clamp(-2, 0)
    y, _ = squashed_sample(mean, log_std, greedy=True)
    torch.testing.assert_close(y, torch.tanh(mean))
    a1, _ = squashed_sample(mean, log_std, torch.Generator().manual_seed(5))
    a2, _ = squashed_sample(mean, log_std, torch.Generator().manual_seed(5))
    a3, _ = squashed_sample(mean, log_std, torch.Generator().manual_seed(6))
    assert torch.equal(a1, a2) and not torch.equal(a1, a3)


def test_gradients_flow_through_the_reparameterized_draw():
    actor = _actor()
    y, log_p = squashed_sample(*actor(torch.randn(16, 3)), torch.Generator().manual_seed(0))
    (y.sum() + log_p.sum()).backward()
    assert actor.mean_head.weight.grad.abs().sum() > 0 and actor.log_std_head.weight.grad.abs().sum() > 0


def test_bounds_map_the_unit_box_to_low_high_and_back():
    bounds = ActionBounds.from_space(spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 10.0], np.float32)))
    y = torch.tensor([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])
    torch.testing.assert_close(bounds.to_env(y), torch.tensor([[-2.0, 0.0], [0.0, 5.0], [2.0, 10.0]]))
    torch.testing.assert_close(bounds.to_unit(bounds.to_env(y)), y)
    assert torch.equal(bounds.to_unit(torch.tensor([[9.0, -9.0]])), torch.tensor([[1.0, -1.0]]))  # clamped
    with pytest.raises(DataShapeError, match="2 dimensions, the actor 3"):
        bounds.check_dim(3)


@pytest.mark.parametrize("low,high", [(-np.inf, 1.0), (0.0, np.inf), (1.0, 1.0)])
def test_unbounded_or_empty_boxes_are_refused(low, high):
    with pytest.raises(ConfigError, match="finite low < high"):
        ActionBounds.from_space(spaces.Box(low, high, (1,), np.float64))


def test_factory_builds_it_and_refuses_output_scaling_and_categorical_actions():
    cfg = ModelConfig.from_dict({"type": "squashed_gaussian_actor", "fc_dims": [16], "kwargs": {"log_std_min": -5.0}})
    actor = ModelFactory().build(cfg, (3,), ActionSpec(gaussian_dim=1))
    assert isinstance(actor, SquashedGaussianActor) and actor.log_std_min == -5.0
    assert sorted(actor.state_dict()) == ["fc.0.0.bias", "fc.0.0.weight", "log_std_head.bias", "log_std_head.weight",
                                          "mean_head.bias", "mean_head.weight"]
    with pytest.raises(ConfigError, match="output_w / output_b"):
        ModelFactory().build(ModelConfig.from_dict({"type": "squashed_gaussian_actor", "output_w": 2.0}), (3,),
                             ActionSpec(gaussian_dim=1))
    with pytest.raises(ConfigError, match="continuous"):
        SquashedGaussianActor((3,), ActionSpec(categorical=(3,)))
    with pytest.raises(DataShapeError, match="Box observations"):
        SquashedGaussianActor({"a": (3,)}, ActionSpec(gaussian_dim=1))
