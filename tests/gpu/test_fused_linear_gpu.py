"""The fused Linear + ReLU trunk on CUDA: same outputs and gradients as the plain layers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _plain(model, x):
    probs, values = model._heads(model.trunk(x))
    return [torch.softmax(p, -1) for p in probs], values


def test_fused_trunk_matches_plain_layers_forward_and_backward(no_tf32):
    from warp_drive.training.models.fully_connected import FullyConnected
    from warp_drive.training.models.fused_linear import fused_path

    torch.manual_seed(0)
    model = FullyConnected(71, [21, 21], fc_dims=(256, 256)).cuda()
    x = torch.randn(100, 110, 71, device="cuda")
    assert fused_path(x, model.trunk[0])
    grads = []
    for forward in (model, lambda obs: _plain(model, obs)):
        model.zero_grad()
        probs, values = forward(x)
        (values.square().mean() + sum((p * torch.arange(21.0, device="cuda")).mean() for p in probs)).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        with torch.no_grad():
            outs = forward(x)
        grads[-1].append(outs[1])
        grads[-1].extend(outs[0])
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_autocast_takes_the_plain_path():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from warp_drive.training.models.fully_connected import FullyConnected
    from warp_drive.training.models.fused_linear import fused_path

    model = FullyConnected(8, [3], fc_dims=(16,)).cuda()
    x = torch.randn(4, 8, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert not fused_path(x, model.trunk[0])
        probs, values = model(x)
    assert probs[0].shape == (4, 3) and values.shape == (4,)
