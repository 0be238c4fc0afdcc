"""``trainer.compile`` and ``trainer.rollout_precision``: the learner's compiled and bf16 paths.

On a GPU the rollout forward and the update's forward + loss are compiled by ``torch.compile``; on the
CPU nothing is compiled (``can_compile`` is False) and the plain path runs. Inductor compiles for the
CPU too, so the compiled code's arithmetic is checked here by forcing ``can_compile``: the same loss,
metrics and gradients as the uncompiled function, on a minibatch gathered inside the compiled function,
without recompiling when the loss coefficients change.
"""

from __future__ import annotations

import copy

import pytest
import torch

import warp_drive.training.algorithms.compiled as compiled
from warp_drive.config import load_run_config
from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.compiled import ActingForward, LossFunction, can_compile
from warp_drive.training.algorithms.actor_critic.ppo import PPO
from warp_drive.training.models.fully_connected import FullyConnected


def _batch(n=48, obs=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(n, obs, generator=g),
            "actions": torch.stack([torch.randint(0, 5, (n,), generator=g), torch.randint(0, 3, (n,), generator=g)], -1).float(),
            "advantages": torch.randn(n, generator=g), "returns": torch.randn(n, generator=g),
            "old_log_probs": -2 * torch.rand(n, generator=g)}


def test_nothing_compiles_on_the_cpu_backend():
    assert not can_compile(torch.device("cpu"))
    model = FullyConnected(7, [5, 3], (16,))
    fn = LossFunction(model, PPO(), None, compile=True)
    assert fn.requested and not fn.compiled
    forward = ActingForward(model, torch.device("cpu"), None, compile=True)
    assert forward.caches_head_weights  # the plain forward: FullyConnected's cached head weights apply


def test_the_float32_rollout_forward_is_not_compiled(monkeypatch):
    """In float32 the fused cuBLASLt bias-ReLU GEMM runs instead (measured faster than Inductor's)."""
    monkeypatch.setattr(compiled, "can_compile", lambda device: True)
    model = FullyConnected(7, [5, 3], (16,))
    assert ActingForward(model, torch.device("cpu"), None, compile=True).caches_head_weights
    assert not ActingForward(model, torch.device("cpu"), torch.bfloat16, compile=True).caches_head_weights


def test_compiled_loss_matches_the_plain_loss_and_does_not_recompile_for_new_coefficients(monkeypatch):
    monkeypatch.setattr(compiled, "can_compile", lambda device: True)
    torch.manual_seed(0)
    model = FullyConnected(7, [5, 3], (32, 32))
    algo = PPO(normalize_advantage=True)
    batch, index = _batch(), torch.randperm(48, generator=torch.Generator().manual_seed(1))[:24]
    results = []
    for compile in (False, True):
        m = copy.deepcopy(model)
        fn = LossFunction(m, algo, None, compile=compile)
        assert fn.compiled is compile
        loss, metrics, values = fn(batch, (0.5, 0.01), index=index)
        loss.backward()
        results.append((loss.detach(), metrics, values.detach(), [p.grad.clone() for p in m.parameters()]))
    (l0, m0, v0, g0), (l1, m1, v1, g1) = results
    torch.testing.assert_close(l1, l0, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(v1, v0, rtol=1e-5, atol=1e-6)
    assert m1.keys() == m0.keys()
    for key in m0:
        torch.testing.assert_close(m1[key], m0[key], rtol=1e-4, atol=1e-5, msg=key)
    for a, b in zip(g1, g0):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert float(torch.cat([g.flatten() for g in g0]).abs().max()) > 0  # real gradients
    # new coefficients are tensor inputs, not constants: no recompilation, and they take effect
    from torch._dynamo.utils import counters
    before = counters["stats"]["unique_graphs"]
    loss2, metrics2, _ = fn(batch, (0.25, 0.02), index=index)
    assert counters["stats"]["unique_graphs"] == before
    assert float(metrics2["vf_loss_coeff"]) == pytest.approx(0.25)
    assert float(metrics2["entropy_coeff"]) == pytest.approx(0.02)


def test_bf16_acting_forward_returns_float32_close_to_fp32():
    torch.manual_seed(0)
    model = FullyConnected(7, [5, 3], (64, 64))
    obs = torch.randn(6, 4, 7)
    with torch.no_grad():
        (p32, q32), v32 = ActingForward(model, torch.device("cpu"), None, False)(obs)
        (p16, q16), v16 = ActingForward(model, torch.device("cpu"), torch.bfloat16, False)(obs)
    assert p16.dtype == q16.dtype == v16.dtype == torch.float32  # what the sampler and buffers read
    torch.testing.assert_close(p16.sum(-1), torch.ones(6, 4), rtol=0, atol=0.01)  # bf16 rounding on the CPU
    torch.testing.assert_close(p16, p32, rtol=0.05, atol=0.01)
    torch.testing.assert_close(v16, v32, rtol=0.05, atol=0.02)


def test_config_parses_compile_and_rollout_precision():
    policy = {"shared": {"to_train": True}}
    cfg = load_run_config({"name": "x", "trainer": {"compile": True, "rollout_precision": "BF16"}, "policy": policy})
    assert cfg.trainer.compile is True and cfg.trainer.rollout_precision == "bf16"
    assert load_run_config({"name": "x", "policy": policy}).trainer.compile is False
    with pytest.raises(ConfigError, match="rollout_precision"):
        load_run_config({"name": "x", "trainer": {"rollout_precision": "fp8"}, "policy": policy})
    with pytest.raises(ConfigError, match="compile"):
        load_run_config({"name": "x", "trainer": {"compile": "sometimes"}, "policy": policy})
