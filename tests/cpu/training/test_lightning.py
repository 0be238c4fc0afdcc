"""Lightning integration on the cpu backend: rollout data, parity with Trainer.train, loggers,
checkpoints and resume, callbacks, the engine factory, and DDP over two CPU processes (gloo)."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")

from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402

from tests.helpers.threads import torch_threads  # noqa: E402
from tests.helpers.toy_env import ToyLine  # noqa: E402
from warp_drive.env.env_wrapper import EnvWrapper  # noqa: E402
from warp_drive.errors import ConfigError  # noqa: E402
from warp_drive.training.lightning import (  # noqa: E402
    CHECKPOINT_KEY,
    EpisodeReturnLogger,
    ExampleEnvEngineFactory,
    PerfStatsCallback,
    RolloutDataset,
    RolloutRenderCallback,
    WarpDriveDataModule,
    WarpDriveModule,
    build_lightning_trainer,
    rollout_dataloader,
)
from warp_drive.training.trainer import Trainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
POLICY_MAP = {"a": [3, 1], "b": [0, 2]}  # out of order on purpose
TINY_TAG = ["trainer.num_envs=4", "trainer.train_batch_size=80", "env.num_taggers=2", "env.num_runners=5",
            "env.episode_length=20", "env.num_other_agents_observed=3", "trainer.seed=1",
            "policy.runner.model.fc_dims=[16, 16]", "policy.tagger.model.fc_dims=[16, 16]"]


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: more threads only add contention."""
    with torch_threads(1):
        yield


def _config(tmp_path, iters=8, a="PPO", b="A2C"):
    pol = {"to_train": True, "algorithm": a, "lr": 0.01, "vf_loss_coeff": 0.5, "entropy_coeff": 0.05,
           "gamma": 0.9, "num_minibatches": 4, "model": {"fc_dims": [32, 32]}}
    return {"name": "toy", "trainer": {"num_envs": 16, "train_batch_size": 16 * 20, "num_episodes": 16 * iters,
                                       "env_backend": "cpu", "seed": 3},
            "policy": {"a": dict(pol), "b": dict(pol, algorithm=b, normalize_return=True)},
            "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 100000, "basedir": str(tmp_path)}}


def _engine(tmp_path, **kw) -> Trainer:
    # episode_length = 20 = steps per rollout, and agents 1 and 3 can never sit on the goal, so
    # every episode ends at a rollout boundary: resuming at an epoch boundary is then exact
    wrapper = EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=16, env_backend="cpu")
    return Trainer(wrapper, _config(tmp_path, **kw), POLICY_MAP, verbose=False, results_dir=str(tmp_path / "engine"))


def _fit(module, tmp_path, max_epochs, ckpt_path=None, **kw):
    kw.setdefault("loggers", False)
    kw.setdefault("enable_progress_bar", False)
    kw.setdefault("enable_model_summary", False)
    trainer = build_lightning_trainer(module, max_epochs=max_epochs, default_root_dir=str(tmp_path), **kw)
    trainer.fit(module, datamodule=WarpDriveDataModule(module), ckpt_path=ckpt_path, weights_only=True)  # as the CLI
    return trainer


def _weights(engine):
    return {tag: [q.detach().clone() for q in p.model.parameters()] for tag, p in engine.policies.items()}


def _assert_same_weights(w1, w2):
    assert w1.keys() == w2.keys()
    for tag in w1:
        for p1, p2 in zip(w1[tag], w2[tag]):
            torch.testing.assert_close(p1, p2, rtol=0, atol=0)


def test_rollout_dataset_yields_views_of_the_engine_buffers(tmp_path):
    engine = _engine(tmp_path)
    engine.env_wrapper.reset_all_envs()
    loader = rollout_dataloader(engine, iterations_per_epoch=2)
    assert len(loader) == 2 and isinstance(loader.dataset, RolloutDataset)
    batches = 0
    for batch in loader:
        assert set(batch) == {"a", "b"}
        for tag, b in batch.items():
            buf = engine.policies[tag].buffers
            assert b["obs"].data_ptr() == buf.obs.data_ptr()  # no copy
            assert b["actions"].data_ptr() == buf.actions.data_ptr()
            if getattr(buf, "advantages", None) is not None:  # computed by the rollout itself
                assert b["advantages"].data_ptr() == buf.advantages.data_ptr()
            assert b["advantages"].shape == buf.rewards.shape == (20, 16, 2)
            assert torch.isfinite(b["advantages"]).all() and torch.isfinite(b["returns"]).all()
        batches += 1
    assert batches == 2
    with pytest.raises(ConfigError, match="iterations_per_epoch"):
        RolloutDataset(engine, iterations_per_epoch=0)


@pytest.mark.parametrize("chunk_samples", [None, 8])
def test_lightning_update_is_the_trainer_update(tmp_path, chunk_samples):
    """Same seed, same engine config: Trainer.train and the Lightning path give bit-identical weights.

    Policy 'a' is PPO (4 minibatches), 'b' A2C with return normalization (its statistics must be
    updated once per rollout on both paths). With 8 agent-samples per cpu chunk both paths run the
    forwards and backwards in chunks of 4 rows (the Lightning update passes the engine's chunks)."""
    plain = _engine(tmp_path / "plain")
    engine = _engine(tmp_path / "lightning")
    if chunk_samples is not None:
        plain.cpu_chunk_samples = engine.cpu_chunk_samples = chunk_samples
    plain.train(3)
    if chunk_samples is None:
        assert WarpDriveModule(_engine(tmp_path / "default")).iterations_per_epoch == 10  # whole episodes, >= 10
    module = WarpDriveModule(engine, iterations_per_epoch=1)
    _fit(module, tmp_path / "lightning", max_epochs=3, checkpoint=False, perf_stats=False)
    _assert_same_weights(_weights(plain), _weights(engine))
    torch.testing.assert_close(engine.policies["b"].algorithm.state_dict(), plain.policies["b"].algorithm.state_dict(),
                               rtol=0, atol=0)
    assert engine.iteration == plain.iteration == 3
    assert {t: p.timestep for t, p in engine.policies.items()} == {t: p.timestep for t, p in plain.policies.items()}
    assert engine.perf["steps"] == 3 * 320 and engine.perf["total"] > 0


def test_fit_with_loggers_checkpoint_and_callbacks(tmp_path):
    engine = _engine(tmp_path)
    module = WarpDriveModule(engine, iterations_per_epoch=1)
    returns = EpisodeReturnLogger(every_n_epochs=2, evaluate=True)
    trainer = _fit(module, tmp_path, max_epochs=4, loggers=["csv", "tensorboard"], callbacks=[returns], log_every_n_steps=1)
    perf = next(c for c in trainer.callbacks if isinstance(c, PerfStatsCallback))
    # the example callback fired on epochs 1 and 3, with training and evaluation returns
    assert [row["epoch"] for row in returns.history] == [1.0, 3.0]
    for row in returns.history:
        for tag in ("a", "b"):
            assert math.isfinite(row[f"{tag}/episode_return_mean"]) and math.isfinite(row[f"eval/{tag}/episode_return_mean"])
    assert len(perf.history) == 4 and all(r["perf/epoch_env_steps_per_s"] > 0 for r in perf.history)
    metrics = trainer.callback_metrics
    for key in ("a/loss", "b/loss", "a/policy_loss", "a/approx_kl", "a/grad_norm", "a/episode_return_mean",
                "b/episode_return_mean", "perf/env_steps_per_s", "perf/epoch_env_steps_per_s"):
        assert key in metrics and math.isfinite(float(metrics[key])), key
    # CSV rows: step metrics every iteration (log_every_n_steps=1)
    csv_dir = Path(trainer.loggers[0].log_dir)
    with open(csv_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    losses = [float(r["a/loss"]) for r in rows if r.get("a/loss")]
    assert len(losses) == 4 and all(math.isfinite(v) for v in losses)
    assert [float(r["a/episode_return_mean"]) for r in rows if r.get("a/episode_return_mean")]
    assert list((tmp_path / "tensorboard").rglob("events.out.tfevents.*"))
    ckpt = next(c for c in trainer.callbacks if isinstance(c, ModelCheckpoint))
    assert Path(ckpt.best_model_path).is_file() and Path(ckpt.last_model_path).is_file()
    state = torch.load(ckpt.last_model_path, weights_only=False)
    assert state[CHECKPOINT_KEY]["iteration"] == 4
    assert state[CHECKPOINT_KEY]["timesteps"] == {"a": 4 * 320, "b": 4 * 320}
    assert len(state["optimizer_states"]) == 2
    # after fit the models and optimizer states are still on the engine's device and usable
    assert all(p.model.training is not None for p in engine.policies.values())
    engine.train(1)


def test_resume_from_model_checkpoint_continues_identically(tmp_path):
    every = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = WarpDriveModule(_engine(tmp_path / "a"), iterations_per_epoch=1)
    _fit(full, tmp_path / "a", max_epochs=4, checkpoint=every)
    saved = tmp_path / "ckpt" / "epoch=1.ckpt"
    assert saved.is_file()

    resumed = WarpDriveModule(_engine(tmp_path / "b"), iterations_per_epoch=1)
    _fit(resumed, tmp_path / "b", max_epochs=4, ckpt_path=str(saved), checkpoint=False)
    _assert_same_weights(_weights(full.engine), _weights(resumed.engine))
    assert resumed.engine.iteration == full.engine.iteration == 4
    timesteps = [{t: p.timestep for t, p in m.engine.policies.items()} for m in (resumed, full)]
    assert timesteps[0] == timesteps[1]
    for k, v in full.engine.sampler.counters_state().items():
        torch.testing.assert_close(resumed.engine.sampler.counters_state()[k], v)

    # reload outside fit: weights, optimizer states and counters as saved
    state = torch.load(saved, weights_only=False)
    fresh = WarpDriveModule(_engine(tmp_path / "c"))
    fresh.restore_checkpoint(saved)
    assert fresh.engine.iteration == 2
    for key, value in fresh.state_dict().items():
        torch.testing.assert_close(value, state["state_dict"][key], rtol=0, atol=0)
    opt = fresh.engine.policies["a"].optimizer.state_dict()
    torch.testing.assert_close(opt["state"][0]["exp_avg"], state["optimizer_states"][0]["state"][0]["exp_avg"])
    loaded = WarpDriveModule.load_from_checkpoint(saved, engine=_engine(tmp_path / "d"))
    assert loaded.engine.iteration == 2
    with pytest.raises(ConfigError, match="does not exist"):
        fresh.restore_checkpoint(tmp_path / "nope.ckpt")


def test_engine_factory_builds_the_engine_in_setup(tmp_path):
    built = []

    def factory(*, rank, world_size, device_id):
        built.append((rank, world_size, device_id))
        return _engine(tmp_path, iters=2)

    module = WarpDriveModule(engine_factory=factory, iterations_per_epoch=2)
    assert module.engine is None and module.iterations_per_epoch == 2
    with pytest.raises(ConfigError, match="max_epochs"):
        build_lightning_trainer(WarpDriveModule(engine_factory=factory))
    trainer = build_lightning_trainer(module, max_epochs=1, loggers=False, checkpoint=False, enable_progress_bar=False,
                                      enable_model_summary=False, default_root_dir=str(tmp_path))
    trainer.fit(module)  # no datamodule: the module's own train_dataloader serves the rollouts
    assert built == [(0, 1, None)] and module.engine.iteration == 2


def test_config_errors(tmp_path):
    engine = _engine(tmp_path)
    with pytest.raises(ConfigError, match="exactly one"):
        WarpDriveModule()
    with pytest.raises(ConfigError, match="exactly one"):
        WarpDriveModule(engine, engine_factory=lambda **_: engine)
    with pytest.raises(ConfigError, match="gradient clipping"):
        build_lightning_trainer(WarpDriveModule(engine), gradient_clip_val=1.0)
    with pytest.raises(ConfigError, match="unknown logger"):
        build_lightning_trainer(WarpDriveModule(engine), loggers=["wandb?"])
    frozen = Trainer(EnvWrapper(ToyLine(num_agents=4, episode_length=20, goal=6.0), num_envs=16, env_backend="cpu"),
                     dict(_config(tmp_path), policy={"a": {"to_train": False}}), None, verbose=False)
    with pytest.raises(ConfigError, match="nothing to train"):
        WarpDriveModule(frozen)


def test_rollout_render_callback_writes_a_gif(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("PIL")
    factory = ExampleEnvEngineFactory(env="tag_continuous", overrides=TINY_TAG, backend="cpu")
    module = WarpDriveModule(factory(rank=0, world_size=1, device_id=None), iterations_per_epoch=1)
    render = RolloutRenderCallback(every_n_epochs=1, dirpath=tmp_path / "gifs", max_frames=4)
    _fit(module, tmp_path, max_epochs=1, checkpoint=False, callbacks=[render])
    assert [p.name for p in render.paths] == ["rollout_epoch0000.gif"] and render.paths[0].stat().st_size > 0


def test_ddp_on_two_cpu_processes(tmp_path):
    """strategy='ddp' (gloo): every rank builds its own env; weights stay equal, rollouts differ; resume works."""
    cmd = [sys.executable, "-m", "warp_drive.training.lightning.train", "--env", "tag_continuous", "--backend", "cpu",
           "--devices", "2", "--strategy", "ddp", "--max-epochs", "2", "--results-dir", str(tmp_path), "--summary",
           "--log-every-n-steps", "1", "--iterations-per-epoch", "1",
           "--quiet", *TINY_TAG]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    for extra in ([], ["--max-epochs", "3", "--resume", "last"]):
        proc = subprocess.run(cmd + extra, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}_summary.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2] and [r["iteration"] for r in ranks] == [3, 3]
    assert ranks[0]["weights_checksum"] == ranks[1]["weights_checksum"]  # gradients were all-reduced
    assert ranks[0]["sampler_seed"] != ranks[1]["sampler_seed"]  # each rank samples its own actions
    metrics = ranks[0]["metrics"]
    assert metrics["runner/episodes"] >= 8.0  # 4 envs x 2 ranks each finished an episode in the last epoch
    assert all(np.isfinite(metrics[k]) for k in ("runner/loss", "tagger/loss", "runner/episode_return_mean"))
