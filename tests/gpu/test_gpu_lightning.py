"""Lightning integration on the pycuda backend: a short run with checkpoint and resume, parity
with Trainer.train, and strategy='ddp' on two GPUs (each rank with its own env replicas)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")

ROOT = Path(__file__).resolve().parents[2]
# Tag continuous, 50 envs x 20 steps per rollout, episodes of 40 steps: 2 rollouts per epoch
TAG = ["trainer.num_envs=50", "trainer.train_batch_size=1000", "trainer.num_episodes=1000", "env.episode_length=40",
       "trainer.seed=5"]


def _factory(tmp_path, overrides=TAG):
    from warp_drive.training.lightning import ExampleEnvEngineFactory

    return ExampleEnvEngineFactory(env="tag_continuous", overrides=[*overrides, f"saving.basedir={tmp_path}"],
                                   backend="pycuda", results_dir=str(tmp_path / "engine"))


def _fit(module, tmp_path, max_epochs, ckpt_path=None, **kw):
    from warp_drive.training.lightning import (
        WarpDriveDataModule,
        build_lightning_trainer,
    )

    kw.setdefault("enable_progress_bar", False)
    kw.setdefault("enable_model_summary", False)
    trainer = build_lightning_trainer(module, max_epochs=max_epochs, default_root_dir=str(tmp_path), **kw)
    trainer.fit(module, datamodule=WarpDriveDataModule(module), ckpt_path=ckpt_path)
    return trainer


def test_short_gpu_run_with_checkpoint_and_resume(tmp_path):
    from lightning.pytorch.callbacks import ModelCheckpoint

    from warp_drive.training.lightning import (
        CHECKPOINT_KEY,
        EpisodeReturnLogger,
        WarpDriveModule,
    )

    factory = _factory(tmp_path)
    module = WarpDriveModule(factory(rank=0, world_size=1, device_id=0), iterations_per_epoch=2)
    returns = EpisodeReturnLogger()
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_epochs=1, save_last=True)
    trainer = _fit(module, tmp_path, max_epochs=3, checkpoint=ckpt, callbacks=[returns], log_every_n_steps=2)
    assert trainer.strategy.root_device.type == "cuda"
    metrics = trainer.callback_metrics
    losses = {k: float(v) for k, v in metrics.items() if k.endswith("/loss")}
    assert set(losses) == {"runner/loss", "tagger/loss"} and all(math.isfinite(v) for v in losses.values()), metrics
    assert all(math.isfinite(float(metrics[f"{t}/episode_return_mean"])) for t in ("runner", "tagger"))
    assert len(returns.history) == 3 and float(metrics["perf/epoch_env_steps_per_s"]) > 0
    engine = module.engine
    assert engine.iteration == 6
    # models and optimizer states stay on the GPU after fit (Lightning's teardown would move them)
    for p in engine.policies.values():
        assert all(q.is_cuda for q in p.model.parameters())
        assert all(v.is_cuda for s in p.optimizer.state.values() for k, v in s.items() if k != "step")
    last = Path(ckpt.last_model_path)
    state = torch.load(last, map_location="cpu", weights_only=False)
    assert state[CHECKPOINT_KEY]["iteration"] == 6

    fresh = WarpDriveModule(factory(rank=0, world_size=1, device_id=0), iterations_per_epoch=2)
    fresh.restore_checkpoint(last)
    for key, value in fresh.state_dict().items():
        torch.testing.assert_close(value.cpu(), state["state_dict"][key], rtol=0, atol=0)
    assert fresh.engine.iteration == 6
    trainer = _fit(fresh, tmp_path / "resume", max_epochs=4, ckpt_path=str(last), checkpoint=False, loggers=False,
                   log_every_n_steps=2)
    assert fresh.engine.iteration == 8 and trainer.current_epoch == 4
    losses = {k: float(v) for k, v in trainer.callback_metrics.items() if k.endswith("/loss")}
    assert set(losses) == {"runner/loss", "tagger/loss"} and all(math.isfinite(v) for v in losses.values())


def test_lightning_matches_trainer_train_on_the_gpu(tmp_path):
    """Same seed: Trainer.train and the Lightning path agree (CUDA atomics allow last-bit noise)."""
    from warp_drive.training.lightning import WarpDriveModule

    # few samples per rollout: a last-bit difference can then hardly flip a sampled action
    small = ["trainer.num_envs=8", "trainer.train_batch_size=160", "env.num_taggers=2", "env.num_runners=10",
             "env.num_other_agents_observed=5"]
    factory = _factory(tmp_path, TAG + small)
    plain = factory(rank=0, world_size=1, device_id=0)
    plain.train(2)
    module = WarpDriveModule(factory(rank=0, world_size=1, device_id=0), iterations_per_epoch=1)
    _fit(module, tmp_path, max_epochs=2, checkpoint=False, loggers=False, perf_stats=False)
    for tag, p in plain.policies.items():
        for a, b in zip(p.model.parameters(), module.engine.policies[tag].model.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_ddp_on_two_gpus(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs >= 2 GPUs")
    cmd = [sys.executable, "-m", "warp_drive.training.lightning.train", "--env", "tag_continuous", "--backend", "pycuda",
           "--devices", "2", "--strategy", "ddp", "--max-epochs", "2", "--results-dir", str(tmp_path), "--summary",
           "--log-every-n-steps", "2", "--iterations-per-epoch", "2",
           "--quiet", *TAG]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for extra in ([], ["--max-epochs", "3", "--resume", "last"]):
        proc = subprocess.run(cmd + extra, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}_summary.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2] and [r["iteration"] for r in ranks] == [6, 6]
    assert ranks[0]["weights_checksum"] == ranks[1]["weights_checksum"]  # all-reduced gradients
    assert ranks[0]["sampler_seed"] != ranks[1]["sampler_seed"]  # independent rollouts per GPU
    metrics = ranks[0]["metrics"]
    assert all(math.isfinite(metrics[k]) for k in ("runner/loss", "tagger/loss", "runner/episode_return_mean"))
    assert metrics["runner/episodes"] >= 2 * 50  # >= one episode per env per epoch, summed over both ranks
