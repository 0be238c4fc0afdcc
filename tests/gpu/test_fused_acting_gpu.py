"""The fused rollout forward on the GPU (``trainer.fused_rollout``): the Triton kernel gives the model's
probabilities and values (exact float32, TF32 and bfloat16 products), replays in a CUDA graph with the weights of
the moment, and a Trainer's captured rollout runs it and trains."""

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


@pytest.mark.parametrize("precision, tol", [("ieee", 1e-5), ("tf32", 2e-3), ("bf16", 2e-2)])
@pytest.mark.parametrize("shape", [(71, (21, 21), (256, 256), (2000, 110)), (4, (2,), (64, 64), (4096, 1)),
                                   (10, (5, 3, 2, 4), (100,), (33, 7))])
def test_the_kernel_gives_the_model_forward(precision, tol, shape):
    from warp_drive.training.models.fused_acting import FusedActing, unsupported_reason

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
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    torch.testing.assert_close(values, want_values, rtol=tol, atol=tol * 10)
    for p, w in zip(probs, want_probs, strict=True):
        assert p.shape == w.shape and p.dtype == torch.float32
        torch.testing.assert_close(p, w, rtol=tol * 10, atol=tol)
        torch.testing.assert_close(p.sum(-1), torch.ones_like(p[..., 0]), rtol=0, atol=1e-5)


def test_a_captured_forward_reads_the_current_weights(no_tf32):
    from warp_drive.training.models.fused_acting import FusedActing

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


@pytest.mark.parametrize("overrides", [[], ["trainer.rollout_precision=bf16"]])
def test_the_trainer_rollout_runs_the_kernel_and_trains(tmp_path, overrides):
    t = _tag_trainer(tmp_path, overrides)
    forwards = t.engine.rollout._forwards
    assert forwards and all(f.fused is not None for f in forwards.values())
    before = {tag: [q.detach().clone() for q in p.model.parameters()] for tag, p in t.policies.items()}
    t.train(4)
    assert t.graphed_rollout is not None and t.graphed_rollout.captured
    for tag, p in t.policies.items():
        after = list(p.model.parameters())
        assert all(torch.isfinite(q).all() for q in after), tag
        assert max(float((a - b).abs().max()) for a, b in zip(after, before[tag])) > 0, tag
        lp = p.buffers.log_probs
        assert torch.isfinite(lp).all() and (lp <= 0).all(), tag


def test_the_option_off_runs_the_pytorch_forward(tmp_path):
    t = _tag_trainer(tmp_path, ["trainer.fused_rollout=false"])
    assert all(f.fused is None for f in t.engine.rollout._forwards.values())
    t.train(2)


def test_fused_and_pytorch_rollouts_sample_the_same_actions(tmp_path, no_tf32):
    """Same seed, exact float32 products: the first rollout's sampled actions (seen through their recorded
    log-probabilities) agree but for draws that fall within float rounding of a cumulative probability."""
    runs = []
    for fused in ("true", "false"):
        t = _tag_trainer(tmp_path / fused, ["trainer.tf32=false", f"trainer.fused_rollout={fused}"])
        t.engine.collect()
        runs.append({tag: p.buffers.log_probs.clone() for tag, p in t.policies.items()})
    for tag in runs[0]:
        a, b = runs[0][tag], runs[1][tag]
        assert a.shape == b.shape and a.numel() > 1000
        assert float(((a - b).abs() < 1e-4).float().mean()) > 0.999, tag
