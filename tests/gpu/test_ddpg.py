"""DDPG on the GPU (pycuda backend): Pendulum learns, the rollout stays on the device, 2.7.1's
pendulum config (scaled down) trains through the 2.7.1 script entry point."""

from __future__ import annotations

import copy

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _wrapper(envs):
    from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv
    from warp_drive.env.env_wrapper import EnvWrapper

    return EnvWrapper(ClassicControlPendulumEnv(episode_length=200, reset_pool_size=500, seed=1), num_envs=envs,
                      env_backend="pycuda")


def _config(tmp_path, envs, steps, iters, seed=1):
    from tests.cpu.training.test_ddpg import _pendulum_config

    cfg = _pendulum_config(tmp_path, envs=envs, steps=steps, iters=iters, seed=seed)
    cfg["trainer"]["env_backend"] = "pycuda"
    return cfg


def test_ddpg_pendulum_short_run_improves_on_the_gpu(tmp_path):
    from warp_drive.training.trainers.trainer_ddpg import TrainerDDPG

    t = TrainerDDPG(_wrapper(256), _config(tmp_path, 256, 8, 600), verbose=False)
    assert t.device.type == "cuda"
    assert all(p.device.type == "cuda" for p in t.policies["shared"].nets.actor.parameters())
    before = float(t.evaluate()["shared"]["episode_return"].mean())
    t.train()
    b = t.policies["shared"].buffers
    assert b.obs.is_cuda and b.actions.is_cuda and t.policies["shared"].ou.state.is_cuda
    after = float(t.evaluate()["shared"]["episode_return"].mean())
    assert before < -1000 and after > before + 300, (before, after)


def test_reference_pendulum_config_trains_through_the_2_7_1_script(tmp_path):
    from tests.cpu.training.test_compat_configs import REFERENCE_CONFIGS
    from warp_drive.training.scripts.example_training_script_pycuda import setup_trainer_and_train

    raw = copy.deepcopy(REFERENCE_CONFIGS["single_pendulum"])
    raw["env"].update(episode_length=50)
    raw["trainer"].update(num_envs=1000, train_batch_size=10000, num_episodes=200, seed=0)
    raw["saving"].update(basedir=str(tmp_path), metrics_log_freq=5)
    setup_trainer_and_train(raw, results_directory="run", verbose=False)
    run = tmp_path / raw["saving"]["name"] / raw["saving"]["tag"] / "run"
    assert any(run.glob("shared_actor_*.state_dict")) and any(run.glob("shared_critic_*.state_dict"))
