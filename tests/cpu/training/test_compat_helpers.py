"""2.7.1's trainer-side helper names: reports, DDPG stand-ins, process helpers, rollout animation."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from warp_drive.errors import ConfigError


def test_trainer_names_resolve_to_the_one_trainer():
    from warp_drive.training.deprecate.trainer import Trainer as Deprecated
    from warp_drive.training.trainer import Trainer
    from warp_drive.training.trainers.trainer_a2c import TrainerA2C
    from warp_drive.training.trainers.trainer_base import TrainerBase

    assert TrainerA2C is Trainer and TrainerBase is Trainer and Deprecated is Trainer


def test_report_helpers_print_2_7_1_tables(capsys):
    from warp_drive.training.trainers.trainer_base import Metrics, PerfStats, SamplerParamsLog, all_equal, verbose_print

    assert all_equal([1, 1, 1]) and all_equal([]) and not all_equal([1, 2])
    verbose_print("hello", 3)
    stats = PerfStats(iters=2, steps=2000, policy_eval_time=0.5, action_sample_time=0.25, env_step_time=0.25,
                      training_time=1.0, total_time=2.0)
    report = stats.get_perf_stats()
    assert report["Mean total time per iter (ms)"] == 1000.0 and report["Mean steps per sec (total)"] == 1000.0
    assert report["Mean steps per sec (training time)"] == 2000.0 and len(report) == 10
    PerfStats.pretty_print(report)
    Metrics().pretty_print({"runner": {"Mean episodic reward": -1.5}})
    SamplerParamsLog().pretty_print({})
    SamplerParamsLog().pretty_print({"use_argmax": 1})
    out = capsys.readouterr().out
    assert "[Device 3]: hello" in out and "Speed performance stats" in out
    assert "Metrics for policy 'runner'" in out and "Parameters for sampler" in out
    with pytest.raises(ConfigError):
        Metrics().pretty_print([1])


def test_ddpg_names():
    from warp_drive.training.trainers.trainer_ddpg import TrainerDDPG, hard_update, soft_update

    with pytest.raises(ConfigError, match="env_wrapper"):
        TrainerDDPG(None, {}, {})
    torch.manual_seed(0)
    target, source = nn.Linear(3, 2), nn.Linear(3, 2)
    before = target.weight.detach().clone()
    soft_update(target, source, 0.25)
    torch.testing.assert_close(target.weight, 0.75 * before + 0.25 * source.weight)
    hard_update(target, source)
    torch.testing.assert_close(target.weight, source.weight)
    with pytest.raises(ConfigError, match="tau"):
        soft_update(target, source, 1.5)


def test_process_helpers(monkeypatch):
    import torch.distributed as dist

    from warp_drive.training.utils.device_child_process.process_group_torch import (
        clear_torch_process_group,
        setup_torch_process_group,
    )
    from warp_drive.training.utils.distributed_train.distributed_trainer_pycuda import perform_distributed_training
    from warp_drive.training.utils.vertical_scaler import perform_auto_vertical_scaling

    with pytest.raises(ConfigError, match="num_gpus >= 2"):
        perform_distributed_training(lambda **kw: None, {"trainer": {"num_gpus": 1}})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="CUDA device"):
        perform_auto_vertical_scaling(lambda *a, **k: None, {"env": {"episode_length": 10}})
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    setup_torch_process_group(0, 1, master_port=port)  # a one-process gloo group
    try:
        assert dist.is_initialized() and dist.get_world_size() == 1 and dist.get_backend() == "gloo"
    finally:
        clear_torch_process_group()
    assert not dist.is_initialized()


def test_rollout_animation_of_a_trainer(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("PIL")
    from matplotlib import animation

    from example_envs.tag_continuous.generate_rollout_animation import generate_tag_env_rollout_animation
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    env = TagContinuous(num_taggers=2, num_runners=8, episode_length=12, num_acceleration_levels=5, num_turn_levels=5,
                        num_other_agents_observed=3, seed=3)
    wrapper = EnvWrapper(env, num_envs=2, env_backend="cpu")
    config = {"name": "tag_continuous", "trainer": {"num_envs": 2, "train_batch_size": 12, "num_episodes": 2, "seed": 0,
                                                    "env_backend": "cpu"},
              "policy": {"tagger": {"model": {"fc_dims": [8]}}, "runner": {"model": {"fc_dims": [8]}}},
              "saving": {"basedir": str(tmp_path)}}
    trainer = Trainer(wrapper, config, {"tagger": list(env.taggers), "runner": list(env.runners)}, verbose=False)
    anim = generate_tag_env_rollout_animation(trainer, fps=25)
    assert isinstance(anim, animation.FuncAnimation)
    path = tmp_path / "episode.gif"
    anim.save(str(path), writer=animation.PillowWriter(fps=25), dpi=40)
    from PIL import Image

    with Image.open(path) as gif:
        assert gif.n_frames >= 2  # reset state + steps until the episode ends (at most 13 frames)
        assert gif.n_frames <= 13
    with pytest.raises(ConfigError, match="Trainer or WarpDriveModule"):
        generate_tag_env_rollout_animation(None)
