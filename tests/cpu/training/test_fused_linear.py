"""The fused Linear + ReLU trunk layer: its backward, and the plain path off CUDA."""

from __future__ import annotations

import pytest
import torch

from warp_drive.training.models.fully_connected import FullyConnected
from warp_drive.training.models.fused_linear import _linear_relu_op, fused_path, linear_relu


def test_backward_matches_finite_differences():
    torch.manual_seed(0)
    x = torch.randn(9, 5, dtype=torch.double, requires_grad=True)
    layer = torch.nn.Linear(5, 4).double()
    assert torch.autograd.gradcheck(lambda a, w, b: _linear_relu_op(a, w, b), (x, layer.weight, layer.bias))


@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (True, False, False)])
def test_backward_equals_autograd_of_the_plain_layers(needs):
    torch.manual_seed(1)
    layer = torch.nn.Linear(6, 8)
    x = torch.randn(20, 6, requires_grad=needs[0])
    layer.weight.requires_grad_(needs[1])
    layer.bias.requires_grad_(needs[2])
    (_linear_relu_op(x, layer.weight, layer.bias) * torch.arange(8.0)).sum().backward()
    fused = [t.grad.clone() if t.grad is not None else None for t in (x, layer.weight, layer.bias)]
    for t in (x, layer.weight, layer.bias):
        t.grad = None
    (torch.relu(layer(x)) * torch.arange(8.0)).sum().backward()
    for got, want in zip(fused, (x.grad, layer.weight.grad, layer.bias.grad)):
        assert (got is None) == (want is None)
        if want is not None:
            torch.testing.assert_close(got, want)


def test_cpu_input_takes_the_plain_path_with_any_lead_shape():
    layer = torch.nn.Linear(3, 4)
    x = torch.randn(2, 5, 3)
    assert not fused_path(x, layer)
    torch.testing.assert_close(linear_relu(x, layer), torch.relu(layer(x)))


def test_model_forward_is_unchanged_by_the_trunk_walk():
    torch.manual_seed(2)
    model = FullyConnected(7, [3, 4], fc_dims=(16, 16))
    x = torch.randn(5, 2, 7)
    probs, values = model(x)
    heads_out, want_values = model._heads(model.trunk(x))
    torch.testing.assert_close(values, want_values)
    for p, logits in zip(probs, heads_out):
        torch.testing.assert_close(p, torch.softmax(logits, -1))


@pytest.mark.parametrize("dtype,features,want", [(torch.float32, 71, 72), (torch.bfloat16, 71, 72),
                                                 (torch.bfloat16, 43, 48), (torch.float32, 43, 44),
                                                 (torch.float32, 64, 64), (torch.bfloat16, 1, 8)])
def test_aligned_width_is_the_next_16_byte_row(dtype, features, want):
    from warp_drive.training.models.fused_linear import aligned_width

    assert aligned_width(features, dtype) == want


@pytest.mark.parametrize("requires_grad", [False, True])
def test_padded_features_give_the_same_product_and_gradient(requires_grad):
    from warp_drive.training.models.fused_linear import pad_features

    torch.manual_seed(3)
    x = torch.randn(10, 71, dtype=torch.double, requires_grad=requires_grad)
    layer = torch.nn.Linear(71, 6).double()
    padded = pad_features(x, torch.double, 72)
    assert padded.shape == (10, 72) and bool((padded[:, 71] == 0).all())
    weight = torch.nn.functional.pad(layer.weight, (0, 1))
    got = _linear_relu_op(padded, weight, layer.bias)
    torch.testing.assert_close(got, torch.relu(layer(x)))
    if requires_grad:
        got.sum().backward()
        want = torch.autograd.grad(torch.relu(layer(x)).sum(), x)[0]
        torch.testing.assert_close(x.grad, want)


def test_the_fused_layer_traces_as_one_op_under_torch_compile(monkeypatch):
    """The CUDA path (forced here on the CPU) compiles whole: the custom op is opaque to Dynamo, no graph break."""
    from warp_drive.training.models import fused_linear

    monkeypatch.setattr(fused_linear, "fused_path", lambda x, linear: True)
    monkeypatch.setattr(fused_linear, "_cuda_width", lambda features, x, dtype: fused_linear.aligned_width(features, dtype))
    torch.manual_seed(4)
    model = FullyConnected(71, [21, 21], fc_dims=(32, 32))
    x = torch.randn(6, 71)

    def loss(obs):
        probs, values = model(obs)
        return values.square().mean() + sum((p * torch.arange(21.0)).mean() for p in probs)

    want = loss(x)
    want.backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    got = torch.compile(loss, backend="aot_eager", fullgraph=True)(x)
    got.backward()
    torch.testing.assert_close(got, want)
    for g, w in zip((p.grad for p in model.parameters()), want_grads):
        torch.testing.assert_close(g, w)
