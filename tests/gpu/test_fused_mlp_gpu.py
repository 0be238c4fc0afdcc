"""The fused MLP kernels on the GPU (``trainer.fused_rollout``, ``trainer.fused_update``): the rollout kernel gives
the model's probabilities and values (exact float32, TF32 and bfloat16 products) and replays in a CUDA graph with the
weights of the moment; the update's kernels give the model's outputs and gradients, and a captured minibatch step
through them trains the weights the plain eager step trains; a Trainer runs both and trains."""

from __future__ import annotations

import pytest

from tests.gpu.test_compiled_learner_gpu import _tag_trainer

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _model(features=71, heads=(21, 21), fc=(256, 256)):
    from warp_drive.training.models.fully_connected import FullyConnected

    torch.manual_seed(0)
    model = FullyConnected(features, list(heads), fc, init_method="orthogonal").cuda()
    for p in model.parameters():  # away from zero biases and tiny heads: every term counts
        p.data.add_(0.3 * torch.randn_like(p))
    return model


def _pytorch_at(model, precision):
    """The model's own PyTorch forward at ``precision`` (TF32 cuBLAS, or bf16 autocast), the yardstick of the
    kernels' rounding: both round the same products, in another order."""
    def forward(obs):
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        with torch.autocast("cuda", torch.bfloat16, enabled=precision == "bf16"):
            probs, values = model(obs)
        return [p.float() for p in probs], values.float()
    return forward


def assert_no_worse_than_pytorch(got, exact, pytorch, name, slack=3.0):
    """``got``'s largest error against the exact float32 result is at most ``slack`` times PyTorch's own at the same
    precision (plus float32 rounding): TF32 and bf16 errors scale with the magnitudes summed, not with the result, so
    a fixed tolerance cannot tell rounding from a wrong tile."""
    err = float((got - exact).abs().max())
    bound = slack * float((pytorch - exact).abs().max()) + 1e-5 * float(exact.abs().max()) + 1e-6
    assert err <= bound, f"{name}: largest error {err:.3g}, PyTorch at the same precision {bound / slack:.3g}"


@pytest.mark.parametrize("precision, tol", [("ieee", 1e-5), ("tf32", 2e-3), ("bf16", 2e-2)])
@pytest.mark.parametrize("shape", [(71, (21, 21), (256, 256), (2000, 110)), (4, (2,), (64, 64), (4096, 1)),
                                   (10, (5, 3, 2, 4), (100,), (33, 7))])
def test_the_kernel_gives_the_model_forward(precision, tol, shape):
    from warp_drive.training.models.fused_mlp import FusedActing, unsupported_reason

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    features, heads, fc, lead = shape
    model = _model(features, heads, fc)
    assert unsupported_reason(model, torch.device("cuda")) is None
    obs = torch.randn(*lead, features, device="cuda")
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference in exact float32
        with torch.no_grad():
            want_probs, want_values = model(obs)
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        fused = FusedActing(model, bf16=precision == "bf16")
        assert fused.precision() == precision
        with torch.no_grad():
            probs, values = fused(obs)
            torch_probs, torch_values = _pytorch_at(model, precision)(obs)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    if precision == "ieee":
        torch.testing.assert_close(values, want_values, rtol=tol, atol=tol * 10)
    assert_no_worse_than_pytorch(values, want_values, torch_values, "values")
    for h, (p, w, tp) in enumerate(zip(probs, want_probs, torch_probs, strict=True)):
        assert p.shape == w.shape and p.dtype == torch.float32
        if precision == "ieee":
            torch.testing.assert_close(p, w, rtol=tol * 10, atol=tol)
        assert_no_worse_than_pytorch(p, w, tp, f"head {h}")
        torch.testing.assert_close(p.sum(-1), torch.ones_like(p[..., 0]), rtol=0, atol=1e-5)


def test_a_captured_forward_reads_the_current_weights(no_tf32):
    from warp_drive.training.models.fused_mlp import FusedActing

    model = _model()
    fused = FusedActing(model, bf16=False)
    obs = torch.randn(500, 110, 71, device="cuda")
    with torch.no_grad():
        fused(obs)  # compiles the kernel outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            probs, values = fused(obs)
        for p in model.parameters():
            p.data.mul_(0.9).add_(0.05)
        obs.normal_()
        graph.replay()
        want_probs, want_values = model(obs)
    torch.testing.assert_close(values, want_values, rtol=1e-5, atol=1e-4)
    for p, w in zip(probs, want_probs):
        torch.testing.assert_close(p, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("precision, tol", [("ieee", 1e-4), ("tf32", 1e-2), ("bf16", 5e-2)])
def test_the_update_kernels_give_the_model_outputs_and_gradients(precision, tol):
    from warp_drive.training.models.fused_mlp import FusedTraining

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    model = _model()
    obs = torch.randn(20, 10000, 71, device="cuda")  # 200,000 rows: many tiles, every backward program loops
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        want_probs, want_values = model(obs)
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        probs, values = FusedTraining(model, bf16=precision == "bf16")(obs)
        torch_probs, torch_values = _pytorch_at(model, precision)(obs)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    if precision == "ieee":
        torch.testing.assert_close(values, want_values, rtol=tol, atol=tol * 10)
    assert_no_worse_than_pytorch(values, want_values, torch_values, "values")
    weights = [torch.randn_like(p) for p in want_probs]

    def loss(ps, v):
        return sum((w * p.clamp_min(1e-8).log()).mean() for w, p in zip(weights, ps)) + (v ** 2).mean()

    params = list(model.parameters())
    got = torch.autograd.grad(loss(probs, values), params)
    want = torch.autograd.grad(loss(want_probs, want_values), params)
    torch_grads = torch.autograd.grad(loss(torch_probs, torch_values), params)
    for (name, _), g, w, tg in zip(model.named_parameters(), got, want, torch_grads, strict=True):
        scale = float(w.abs().max())
        assert scale > 0, name
        if precision == "ieee":
            torch.testing.assert_close(g, w, rtol=tol, atol=tol * scale, msg=name)
        assert_no_worse_than_pytorch(g, w, tg, name)
        cos = torch.nn.functional.cosine_similarity(g.flatten(), w.flatten(), dim=0)
        torch_cos = torch.nn.functional.cosine_similarity(tg.flatten(), w.flatten(), dim=0)
        assert 1 - cos <= 3 * (1 - torch_cos) + 1e-6, (name, float(cos), float(torch_cos))


@pytest.mark.parametrize("dtype", [None, "bf16"])
def test_a_fused_graphed_step_trains_the_eager_weights(no_tf32, dtype):
    from tests.gpu.test_compiled_learner_gpu import assert_graphed_step_trains_the_eager_weights
    from tests.gpu.test_graphed_update_gpu import _setup
    from warp_drive.training.models.fully_connected import FullyConnected

    _, algorithm, batch = _setup()
    torch.manual_seed(1)
    model = FullyConnected(23, [4, 3], fc_dims=(64, 64)).cuda()  # no normalize_obs: the fused kernels take it
    loss_fn = assert_graphed_step_trains_the_eager_weights(model, algorithm, batch, dtype, compile=False, fused=True)
    assert loss_fn.fused is not None


@pytest.mark.parametrize("overrides", [[], ["trainer.rollout_precision=bf16", "trainer.update_precision=bf16"],
                                       ["trainer.compile=true"]])
def test_the_trainer_runs_the_kernels_and_trains(tmp_path, overrides):
    t = _tag_trainer(tmp_path, ["trainer.fused_rollout=true", "trainer.fused_update=true", *overrides])
    forwards = t.engine.rollout._forwards
    assert forwards and all(f.fused is not None for f in forwards.values())
    before = {tag: [q.detach().clone() for q in p.model.parameters()] for tag, p in t.engine.policies.items()}
    t.train(4)
    assert t.engine.graphed_rollout is not None and t.engine.graphed_rollout.captured
    for tag, p in t.engine.policies.items():
        after = list(p.model.parameters())
        assert all(torch.isfinite(q).all() for q in after), tag
        assert max(float((a - b).abs().max()) for a, b in zip(after, before[tag])) > 0, tag
        lp = p.buffers.log_probs
        assert torch.isfinite(lp).all() and (lp <= 0).all(), tag
        assert p.loss_fn is not None and p.loss_fn.fused is not None, tag


def test_the_options_off_run_the_pytorch_forward(tmp_path):
    t = _tag_trainer(tmp_path, [])  # the defaults
    assert all(f.fused is None for f in t.engine.rollout._forwards.values())
    t.train(2)
    assert all(p.loss_fn is None or p.loss_fn.fused is None for p in t.engine.policies.values())


def test_fused_and_pytorch_rollouts_sample_the_same_actions(tmp_path, no_tf32):
    """Same seed, exact float32 products: the first rollout's sampled actions (seen through their recorded
    log-probabilities) agree but for draws that fall within float rounding of a cumulative probability."""
    runs = []
    for fused in ("true", "false"):
        t = _tag_trainer(tmp_path / fused, ["trainer.tf32=false", f"trainer.fused_rollout={fused}",
                                            f"trainer.fused_update={fused}"])
        t.engine.collect()
        runs.append({tag: p.buffers.log_probs.clone() for tag, p in t.engine.policies.items()})
    for tag in runs[0]:
        a, b = runs[0][tag], runs[1][tag]
        assert a.shape == b.shape and a.numel() > 1000
        assert float(((a - b).abs() < 1e-4).float().mean()) > 0.999, tag
