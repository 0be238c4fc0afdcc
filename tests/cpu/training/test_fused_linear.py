"""The fused Linear + ReLU trunk layer: its backward, and the plain path off CUDA."""

from __future__ import annotations

import pytest
import torch

from warp_drive.training.models.fully_connected import FullyConnected
from warp_drive.training.models.fused_linear import _LinearReLU, fused_path, linear_relu


def test_backward_matches_finite_differences():
    torch.manual_seed(0)
    x = torch.randn(9, 5, dtype=torch.double, requires_grad=True)
    layer = torch.nn.Linear(5, 4).double()
    assert torch.autograd.gradcheck(lambda a, w, b: _LinearReLU.apply(a, w, b), (x, layer.weight, layer.bias))


@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (True, False, False)])
def test_backward_equals_autograd_of_the_plain_layers(needs):
    torch.manual_seed(1)
    layer = torch.nn.Linear(6, 8)
    x = torch.randn(20, 6, requires_grad=needs[0])
    layer.weight.requires_grad_(needs[1])
    layer.bias.requires_grad_(needs[2])
    (_LinearReLU.apply(x, layer.weight, layer.bias) * torch.arange(8.0)).sum().backward()
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
