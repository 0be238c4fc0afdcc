"""SAC on the GPU (pycuda backend): the bundled SAC configs learn (Pendulum >= -200 and
MountainCarContinuous >= 90 greedy over 100 fresh-start episodes; rl-baselines3-zoo's SAC rows:
-157 at 20,000 env steps, 94.7 at 50,000), and the rollout, replay and networks stay on the device."""

from __future__ import annotations

import logging
import time

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

logger = logging.getLogger(__name__)


def _train_bundled(name, tmp_path, seed=None):
    from warp_drive.cli.envs import env_class_for
    from warp_drive.cli.setup_and_train import run_config_path
    from warp_drive.config import load_run_config
    from warp_drive.training.run.build import build_trainer

    overrides = ["trainer.env_backend=pycuda", f"saving.basedir={tmp_path}", "saving.metrics_log_freq=1000000",
                 "saving.checkpoint_every_seconds=0"]
    if seed is not None:
        overrides += [f"trainer.seed={seed}", f"env.seed={seed}"]
    config = load_run_config(run_config_path(name), overrides)
    trainer = build_trainer(config, env_class_for(config.name), backend="pycuda", results_dir=str(tmp_path / "run"),
                            verbose=False)
    start = time.perf_counter()
    trainer.train()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    result = trainer.evaluate(total_episodes=100, random_baseline=False)["shared"]
    p = trainer.engine.policies["shared"]
    logger.warning("%s on %s: %d env steps, %.1f s, greedy %.2f over %d episodes", name, torch.cuda.get_device_name(),
                   p.env_steps, seconds, result["episode_return"].mean(), result["num_episodes"])
    return trainer, result, seconds


def test_pendulum_sac_reaches_minus_200_greedy_on_the_gpu(tmp_path):
    trainer, result, _ = _train_bundled("single_pendulum_sac", tmp_path)
    p = trainer.engine.policies["shared"]
    assert trainer.engine.device.type == "cuda"
    assert p.replay.data["obs"].is_cuda and p.buffers.next_obs.is_cuda and p.nets.log_alpha.is_cuda
    assert all(q.is_cuda for q in p.nets.target_critic.parameters())
    assert result["num_episodes"] >= 100
    assert result["episode_return"].mean() >= -200, result["episode_return"].mean()


def test_continuous_mountain_car_sac_reaches_90_greedy_on_the_gpu(tmp_path):
    _, result, _ = _train_bundled("single_continuous_mountain_car_sac", tmp_path)
    assert result["num_episodes"] >= 100
    assert result["episode_return"].mean() >= 90, result["episode_return"].mean()
