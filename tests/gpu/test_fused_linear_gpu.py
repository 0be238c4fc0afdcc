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


def _loss(model, forward, x):
    probs, values = forward(x)
    return values.float().square().mean() + sum((p.float() * torch.arange(21.0, device="cuda")).mean() for p in probs)


@pytest.mark.parametrize("align", [True, False])
def test_bf16_autocast_takes_the_fused_path_and_matches_autocast_of_the_plain_layers(align, monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from warp_drive.training.models import fused_linear
    from warp_drive.training.models.fully_connected import FullyConnected

    monkeypatch.setattr(fused_linear, "ALIGN", align)
    torch.manual_seed(1)
    model = FullyConnected(71, [21, 21], fc_dims=(256, 256)).cuda()
    x = torch.randn(4096, 71, device="cuda")
    results = []
    for forward in (model, lambda obs: _plain(model, obs)):
        model.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            assert fused_linear.fused_path(x, model.trunk[0])
            loss = _loss(model, forward, x)
            probs, values = forward(x)
        loss.backward()
        results.append([values.float(), *(p.float() for p in probs), *(p.grad.clone() for p in model.parameters())])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=3e-2, atol=3e-3)


def test_aligned_and_unaligned_products_agree_in_float32(no_tf32, monkeypatch):
    from warp_drive.training.models import fused_linear
    from warp_drive.training.models.fully_connected import FullyConnected

    torch.manual_seed(2)
    model = FullyConnected(71, [21, 21], fc_dims=(256, 256)).cuda()
    x = torch.randn(3000, 71, device="cuda")
    results = []
    for align in (True, False):
        monkeypatch.setattr(fused_linear, "ALIGN", align)
        model.zero_grad()
        _loss(model, model, x).backward()
        with torch.no_grad():
            probs, values = model(x)
            logits, _ = model._heads(model._trunk(x))
        assert logits[0].stride(0) == (44 if align else 43)  # the heads' padded product: 43 outputs in rows of 44
        results.append([values, *probs, *(p.grad.clone() for p in model.parameters())])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_compiled_bf16_update_keeps_the_fused_op_and_matches_eager():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from warp_drive.training.models.fully_connected import FullyConnected

    torch.manual_seed(3)
    model = FullyConnected(71, [21, 21], fc_dims=(256, 256)).cuda()
    x = torch.randn(2048, 71, device="cuda")

    def step(obs):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return _loss(model, model, obs)

    grads = []
    for fn in (step, torch.compile(step, fullgraph=True)):
        model.zero_grad()
        fn(x).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-3)
