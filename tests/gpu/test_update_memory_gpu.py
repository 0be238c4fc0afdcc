"""GPU update in chunks (issue 17 item 4): the same step as the whole minibatch (up to rounding),
with less peak memory; configs that fit run unchunked."""

from __future__ import annotations

import copy

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    pytest.importorskip("pycuda")
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    env = dict(num_taggers=5, num_runners=100, episode_length=100, seed=3)
    policy = {"to_train": True, "algorithm": "PPO", "lr": 0.001, "num_epochs": 1, "num_minibatches": 1,
              "model": {"type": "fully_connected", "fc_dims": [256, 256], "model_ckpt_filepath": ""}}
    cfg = {"name": "tag_continuous", "env": env,
           "trainer": {"num_envs": 200, "train_batch_size": 200 * 20, "num_episodes": 1000, "seed": 0},
           "policy": {"runner": dict(policy), "tagger": dict(policy)},
           "saving": {"basedir": str(tmp_path_factory.mktemp("runs")), "name": "t", "tag": "t"}}
    wrapper = EnvWrapper(TagContinuous(**env), num_envs=200, env_backend="pycuda")
    t = Trainer(wrapper, cfg, {"tagger": wrapper.env.taggers, "runner": wrapper.env.runners}, verbose=False)
    yield t
    t.graceful_close()


def _update(t, batches, chunk_samples):
    """One update from ``batches`` with the given chunk size; returns the runner's gradients (Adam's
    first step is about +-lr wherever a gradient is nonzero, so weights would hide rounding in the
    sign of tiny gradients) and the peak bytes; then restores the runner."""
    runner = t.policies["runner"]
    saved = (copy.deepcopy(runner.model.state_dict()), copy.deepcopy(runner.optimizer.state_dict()),
             {tag: p.timestep for tag, p in t.policies.items()})
    t.update_chunk_samples = chunk_samples
    batches = {tag: {k: v.clone() for k, v in b.items()} for tag, b in batches.items()}
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()  # the batches are in the base: the peak is the update's own
    t.update_policies(batches)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    grads = {n: q.grad.detach().clone() for n, q in runner.model.named_parameters() if q.grad is not None}
    runner.model.load_state_dict(saved[0])
    runner.optimizer.load_state_dict(saved[1])
    for tag, step in saved[2].items():
        t.policies[tag].timestep = step
    return grads, peak


def test_chunked_update_matches_the_whole_minibatch_with_less_memory(trainer):
    batches = trainer.collect()
    rows = trainer.steps_per_iter * trainer.num_envs  # (time, env) rows of one minibatch
    whole, peak_whole = _update(trainer, batches, 10**12)
    chunked, peak_chunked = _update(trainer, batches, 100 * rows // 8)  # about 8 chunks of the runners' rows
    assert whole and set(chunked) == set(whole)
    for name in whole:
        scale = float(whole[name].abs().max())
        torch.testing.assert_close(chunked[name], whole[name], rtol=1e-2, atol=1e-3 * scale + 1e-8)
    print(f"update peak: whole {peak_whole / 2**20:.0f} MiB, 8 chunks {peak_chunked / 2**20:.0f} MiB")
    assert peak_chunked < 0.5 * peak_whole


def test_automatic_size_does_not_split_what_fits(trainer):
    runner = trainer.policies["runner"]
    trainer.update_chunk_samples = None
    rows = trainer.update_chunk_rows(runner)
    assert rows is not None and rows >= trainer.steps_per_iter * trainer.num_envs  # 4,000 rows x 100 agents fit


def test_bf16_update_takes_the_fp32_step_up_to_rounding(trainer):
    """``trainer.update_precision: bf16`` on the GPU: same gradient direction as float32 (TF32)."""
    batches = trainer.collect()
    fp32, _ = _update(trainer, batches, 10**12)
    trainer.update_autocast_dtype = torch.bfloat16
    try:
        bf16, _ = _update(trainer, batches, 10**12)
    finally:
        trainer.update_autocast_dtype = None
    assert bf16.keys() == fp32.keys()
    got, want = (torch.cat([g[k].flatten().float() for k in sorted(g)]) for g in (bf16, fp32))
    cos = float(torch.nn.functional.cosine_similarity(got, want, dim=0))
    rel = float((got - want).norm() / want.norm())
    print(f"bf16 vs fp32 update gradient: cosine {cos:.5f}, relative error {rel:.4f}")
    assert cos > 0.99 and rel < 0.15
