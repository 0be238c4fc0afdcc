"""GAE / discounted returns: vectorised scan vs a per-env per-agent loop, and closed forms."""

from __future__ import annotations

import pytest
import torch

from warp_drive.errors import DataShapeError, UsageError
from warp_drive.training.algorithms.actor_critic.returns import compute_gae, discounted_returns

B, E, A = 7, 4, 3


def loop_gae(rewards, values, last_values, terminated, truncated, final_values, gamma, lam):
    """Straightforward reference: one scalar recursion per (env, agent)."""
    adv = torch.zeros_like(rewards)
    n_steps, n_envs, n_agents = rewards.shape
    for e in range(n_envs):
        for a in range(n_agents):
            running = 0.0
            for t in reversed(range(n_steps)):
                term = (
                    bool(terminated[t, e]) if terminated.dim() == 2 else bool(terminated[t, e, a])
                )
                trunc = truncated is not None and bool(truncated[t, e])
                if term:
                    next_value, cont = 0.0, 0.0
                elif trunc:
                    next_value, cont = float(final_values[t, e, a]), 0.0
                elif t + 1 < n_steps:
                    next_value, cont = float(values[t + 1, e, a]), 1.0
                else:
                    next_value, cont = float(last_values[e, a]), 1.0
                delta = float(rewards[t, e, a]) + gamma * next_value - float(values[t, e, a])
                running = delta + gamma * lam * cont * running
                adv[t, e, a] = running
    return adv, adv + values


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(1234)
    rewards = torch.randn(B, E, A, generator=g, dtype=torch.float64)
    values = torch.randn(B, E, A, generator=g, dtype=torch.float64)
    last_values = torch.randn(E, A, generator=g, dtype=torch.float64)
    final_values = torch.randn(B, E, A, generator=g, dtype=torch.float64)
    terminated = torch.zeros(B, E, dtype=torch.int32)
    truncated = torch.zeros(B, E, dtype=torch.int32)
    terminated[2, 0] = 1  # mid-batch termination
    terminated[B - 1, 1] = 2  # termination on the last step (MountainCar-style flag 2)
    truncated[0, 2] = 1  # truncation on the first step
    truncated[4, 2] = 1  # and later in the same env
    truncated[B - 1, 3] = 1  # truncation on the last step
    terminated[5, 3] = 1  # both flags on one step: termination wins
    truncated[5, 3] = 1
    return rewards, values, last_values, terminated, truncated, final_values


@pytest.mark.parametrize("gamma,lam", [(0.99, 1.0), (0.9, 0.95), (0.5, 0.0), (1.0, 0.7)])
def test_gae_matches_loop_with_terminations_and_truncations(batch, gamma, lam):
    rewards, values, last_values, terminated, truncated, final_values = batch
    adv, ret = compute_gae(
        rewards,
        values,
        last_values,
        terminated,
        truncated,
        final_values,
        gamma=gamma,
        gae_lambda=lam,
    )
    ref_adv, ref_ret = loop_gae(
        rewards, values, last_values, terminated, truncated, final_values, gamma, lam
    )
    torch.testing.assert_close(adv, ref_adv, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ret, ref_ret, rtol=1e-12, atol=1e-12)


def test_gae_without_truncations_matches_loop(batch):
    rewards, values, last_values, terminated, _, final_values = batch
    adv, _ = compute_gae(rewards, values, last_values, terminated, gamma=0.97, gae_lambda=0.9)
    ref_adv, _ = loop_gae(rewards, values, last_values, terminated, None, final_values, 0.97, 0.9)
    torch.testing.assert_close(adv, ref_adv, rtol=1e-12, atol=1e-12)


def test_gae_per_agent_termination_matches_loop(batch):
    rewards, values, last_values, _, _, final_values = batch
    term = torch.zeros(B, E, A, dtype=torch.bool)
    term[3, 1, 0] = True
    term[0, 2, 2] = True
    adv, _ = compute_gae(rewards, values, last_values, term, gamma=0.95, gae_lambda=0.8)
    ref_adv, _ = loop_gae(rewards, values, last_values, term, None, final_values, 0.95, 0.8)
    torch.testing.assert_close(adv, ref_adv, rtol=1e-12, atol=1e-12)


def test_float32_matches_float64_reference(batch):
    rewards, values, last_values, terminated, truncated, final_values = batch
    args32 = [x.float() for x in (rewards, values, last_values)]
    adv, ret = compute_gae(
        *args32, terminated, truncated, final_values.float(), gamma=0.99, gae_lambda=0.95
    )
    ref_adv, ref_ret = loop_gae(
        rewards, values, last_values, terminated, truncated, final_values, 0.99, 0.95
    )
    assert adv.dtype == torch.float32
    torch.testing.assert_close(adv.double(), ref_adv, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret.double(), ref_ret, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99, 1.0])
def test_constant_reward_closed_form(gamma):
    r, n = 0.7, 12
    rewards = torch.full((n, 2, 1), r, dtype=torch.float64)
    zeros = torch.zeros(n, 2, dtype=torch.int32)
    last = torch.tensor([[0.0], [5.0]], dtype=torch.float64)  # env 1 bootstraps from V(s_B) = 5
    ret = discounted_returns(rewards, last, zeros, gamma=gamma)
    for t in range(n):
        k = n - t  # remaining steps
        geometric = r * k if gamma == 1.0 else r * (1 - gamma**k) / (1 - gamma)
        assert ret[t, 0, 0].item() == pytest.approx(geometric, rel=1e-12)
        assert ret[t, 1, 0].item() == pytest.approx(geometric + gamma**k * 5.0, rel=1e-12)


def test_last_step_bootstraps_reward_plus_discounted_value():
    """Reference defect 5: the last return must be r + gamma * V(s_B), not V(s_{B-1})."""
    rewards = torch.tensor([[[1.0]], [[2.0]]])
    values = torch.tensor([[[10.0]], [[20.0]]])
    last = torch.tensor([[30.0]])
    _, ret = compute_gae(rewards, values, last, torch.zeros(2, 1), gamma=0.5)
    assert ret[1, 0, 0].item() == pytest.approx(2.0 + 0.5 * 30.0)
    assert ret[0, 0, 0].item() == pytest.approx(1.0 + 0.5 * (2.0 + 0.5 * 30.0))


def test_termination_cuts_and_truncation_bootstraps_from_final_value():
    rewards = torch.ones(3, 2, 1)
    values = torch.zeros(3, 2, 1)
    last = torch.full((2, 1), 100.0)
    term = torch.tensor([[0, 0], [1, 0], [0, 0]])
    trunc = torch.tensor([[0, 0], [0, 1], [0, 0]])
    final = torch.zeros(3, 2, 1)
    final[1, 1, 0] = 8.0
    _, ret = compute_gae(rewards, values, last, term, trunc, final, gamma=0.5)
    # env 0: step 1 terminates -> G_1 = 1, G_0 = 1 + 0.5; step 2 (new episode) = 1 + 50
    assert ret[:, 0, 0].tolist() == pytest.approx([1.5, 1.0, 51.0])
    # env 1: step 1 truncated with V(final) = 8 -> G_1 = 1 + 4 = 5, G_0 = 1 + 2.5
    assert ret[:, 1, 0].tolist() == pytest.approx([3.5, 5.0, 51.0])


def test_perfect_values_give_zero_advantages_for_any_lambda():
    gamma, r = 0.9, 2.0
    v = r / (1 - gamma)
    rewards = torch.full((6, 3, 2), r, dtype=torch.float64)
    values = torch.full_like(rewards, v)
    for lam in (0.0, 0.5, 1.0):
        adv, ret = compute_gae(
            rewards,
            values,
            torch.full((3, 2), v, dtype=torch.float64),
            torch.zeros(6, 3),
            gamma=gamma,
            gae_lambda=lam,
        )
        torch.testing.assert_close(adv, torch.zeros_like(adv), rtol=0, atol=1e-12)
        torch.testing.assert_close(ret, values)


def test_lambda_zero_gives_td_errors(batch):
    rewards, values, last_values, _, _, _ = batch
    adv, _ = compute_gae(rewards, values, last_values, torch.zeros(B, E), gamma=0.9, gae_lambda=0.0)
    next_values = torch.cat([values[1:], last_values[None]])
    torch.testing.assert_close(adv, rewards + 0.9 * next_values - values)


def test_outputs_carry_no_gradient():
    values = torch.randn(3, 2, 1, requires_grad=True)
    adv, ret = compute_gae(
        torch.randn(3, 2, 1), values, torch.randn(2, 1), torch.zeros(3, 2), gamma=0.9
    )
    assert not adv.requires_grad and not ret.requires_grad


def test_truncated_without_final_values_is_refused():
    with pytest.raises(UsageError, match="final_values"):
        compute_gae(
            torch.zeros(2, 1, 1),
            torch.zeros(2, 1, 1),
            torch.zeros(1, 1),
            torch.zeros(2, 1),
            torch.ones(2, 1),
            gamma=0.9,
        )


@pytest.mark.parametrize(
    "shapes",
    [
        dict(values=(3, 2, 2)),
        dict(last=(3, 2, 1)),
        dict(term=(3, 3)),
    ],
)
def test_shape_mismatch_raises_data_shape_error(shapes):
    values = torch.zeros(shapes.get("values", (3, 2, 1)))
    last = torch.zeros(shapes.get("last", (2, 1)))
    term = torch.zeros(shapes.get("term", (3, 2)))
    with pytest.raises(DataShapeError):
        compute_gae(torch.zeros(3, 2, 1), values, last, term, gamma=0.9)
