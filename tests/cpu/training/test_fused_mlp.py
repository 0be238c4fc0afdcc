"""The fused MLP kernels (``trainer.fused_rollout``, ``trainer.fused_update``): which models they take, and — run
on the CPU in Triton's interpreter (``TRITON_INTERPRET=1``, in a subprocess: the variable must be set before Triton
is imported) — that they compute what the model computes: the rollout kernel every head's probabilities and the
values, the update's kernels the same outputs and the gradients of every weight and bias, for one and two hidden
layers, 1 to 4 heads, widths that are not powers of two and row counts that are not multiples of the tile."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from warp_drive.training.models.action_spec import ActionSpec
from warp_drive.training.models.fully_connected import FullyConnected
from warp_drive.training.models.fused_mlp import unsupported_reason

ROOT = Path(__file__).resolve().parents[3]
CUDA = torch.device("cuda")  # only named: unsupported_reason reads the type, nothing runs there
has_triton = importlib.util.find_spec("triton") is not None


def _tag_model(**kwargs):
    return FullyConnected(71, [21, 21], (256, 256), **kwargs)


@pytest.mark.skipif(not has_triton, reason="needs Triton (the dev extra installs it on Linux x86-64)")
def test_the_tag_and_classic_models_are_taken():
    assert unsupported_reason(_tag_model(), CUDA) is None
    assert unsupported_reason(FullyConnected(4, [2], (64, 64)), CUDA) is None
    assert unsupported_reason(FullyConnected(6, [3, 3, 3, 3], (100,)), CUDA) is None


@pytest.mark.parametrize("model, device, words", [
    (lambda: _tag_model(), torch.device("cpu"), "not a CUDA device"),
    (lambda: _tag_model(activation="tanh"), CUDA, "activation 'tanh'"),
    (lambda: _tag_model(normalize_obs=True), CUDA, "normalize_obs"),
    (lambda: FullyConnected(3, ActionSpec(gaussian_dim=1), (64, 64)), CUDA, "Gaussian"),
    (lambda: FullyConnected({"a": 3, "b": 2}, [2], (64, 64)), CUDA, "dict observations"),
    (lambda: FullyConnected(4, [2], (64, 64, 64)), CUDA, "3 hidden layers"),
    (lambda: FullyConnected(4, [2], ()), CUDA, "0 hidden layers"),
    (lambda: FullyConnected(4, [2], (512, 64)), CUDA, "wider than 256"),
    (lambda: FullyConnected(4, [2] * 5, (64,)), CUDA, "heads"),
    (lambda: FullyConnected(4, [100, 30], (64,)), CUDA, "heads"),
    (lambda: FullyConnected(4, [2], (64,)).double(), CUDA, "float32"),
])
def test_other_models_run_the_pytorch_forward(model, device, words):
    if device.type == "cuda" and not has_triton:
        pytest.skip("needs Triton: without it every model is refused for that reason")
    reason = unsupported_reason(model(), device)
    assert reason is not None and words in reason


def test_the_trainer_options_default_off_and_parse():
    from warp_drive.config import load_run_config
    from warp_drive.errors import ConfigError
    from example_envs import get_default_config_path

    path = get_default_config_path("cartpole")
    assert load_run_config(path).trainer.fused_rollout is False and load_run_config(path).trainer.fused_update is False
    on = load_run_config(path, ["trainer.fused_rollout=true", "trainer.fused_update=true"]).trainer
    assert on.fused_rollout is True and on.fused_update is True
    with pytest.raises(ConfigError, match="fused_rollout"):
        load_run_config(path, ["trainer.fused_rollout=3"])


_INTERPRETED = textwrap.dedent("""
    import torch
    from warp_drive.training.models.fully_connected import FullyConnected
    from warp_drive.training.models.fused_mlp import FusedActing, FusedTraining
    from warp_drive.training.models.triton_policy_forward import mlp_heads_forward

    torch.manual_seed(0)
    cases = [(71, [21, 21], (256, 256), (3, 50)), (4, [2], (64, 64), (37,)), (10, [5, 3, 2, 4], (40,), (5, 13)),
             (6, [3], (24, 40), (10, 1)), (130, [7], (32, 16), (70,))]
    for features, heads, fc, lead in cases:
        model = FullyConnected(features, heads, fc, init_method="orthogonal")
        for p in model.parameters():  # away from the init's zero biases and tiny heads: every term counts
            p.data.add_(0.3 * torch.randn_like(p))
        obs = torch.randn(*lead, features)
        # the update's kernels: the same outputs, and the gradients of a loss through them
        probs, values = FusedTraining(model, bf16=False)(obs)
        want_probs, want_values = model(obs)
        weights = [torch.randn_like(p) for p in want_probs]
        loss = lambda ps, v: sum((w * p.clamp_min(1e-8).log()).sum() for w, p in zip(weights, ps)) + (v ** 2).sum()
        got = torch.autograd.grad(loss(probs, values), list(model.parameters()))
        want = torch.autograd.grad(loss(want_probs, want_values), list(model.parameters()))
        for (name, _), g, w in zip(model.named_parameters(), got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-5 * float(w.abs().max()), msg=name)
        with torch.no_grad():
            want_probs, want_values = model(obs)
            probs, values = FusedActing(model, bf16=False)(obs)  # exact float32 off the GPU: "ieee"
        assert values.shape == want_values.shape, (values.shape, want_values.shape)
        torch.testing.assert_close(values, want_values, rtol=1e-4, atol=1e-4)
        for p, w in zip(probs, want_probs, strict=True):
            assert p.shape == w.shape and p.is_contiguous()
            torch.testing.assert_close(p, w, rtol=1e-4, atol=1e-5)
        print("ok", features, heads, fc, lead)
    # the tile: more rows than one program takes, fewer, and not a multiple
    model = FullyConnected(5, [4, 3], (48, 48))
    x = torch.randn(200, 5)
    linears = [m for m in model.trunk if isinstance(m, torch.nn.Linear)]
    w, b = model._concat_head_weights()
    for block_m in (16, 64, 256):
        probs, values = mlp_heads_forward(x, [(l.weight.data, l.bias.data) for l in linears], w.data, b.data,
                                          [4, 3], "ieee", block_m=block_m, num_warps=4)
        with torch.no_grad():
            want, want_v = model(x)
        torch.testing.assert_close(values, want_v, rtol=1e-5, atol=1e-5)
        for p, q in zip(probs, want):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    print("tiles ok")
""")


@pytest.mark.skipif(not has_triton, reason="needs Triton (the dev extra installs it on Linux x86-64)")
def test_the_kernel_computes_the_model_forward_in_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run([sys.executable, "-c", _INTERPRETED], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("ok") == 6
