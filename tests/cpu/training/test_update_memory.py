"""GPU update chunks sized from the model and the free device memory (issue 17 item 4); the CPU
backend keeps its own chunks. The GPU side runs in tests/gpu/test_update_memory_gpu.py."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from warp_drive.training.engine import update_memory


def test_activation_bytes_count_every_linear_input_and_output():
    model = nn.Sequential(nn.Linear(71, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 23))
    assert update_memory.activation_bytes_per_sample(model) == 4 * ((71 + 256) + (256 + 256) + (256 + 23))
    assert update_memory.activation_bytes_per_sample(nn.ReLU()) is None


def test_auto_chunk_samples_takes_a_fraction_of_free_memory(monkeypatch):
    model = nn.Linear(100, 100)  # 800 bytes per sample
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10_000_000, 80_000_000))
    assert update_memory.auto_chunk_samples(model, torch.device("cuda", 0)) == int(10_000_000 * 0.6) // 800
    assert update_memory.auto_chunk_samples(model, torch.device("cuda", 0), fraction=0.1) == 1_000_000 // 800
    assert update_memory.auto_chunk_samples(model, torch.device("cpu")) is None
    assert update_memory.auto_chunk_samples(nn.ReLU(), torch.device("cuda", 0)) is None


@pytest.fixture()
def cpu_trainer(tmp_path):
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainer import Trainer

    env = dict(num_taggers=1, num_runners=3, grid_length=5.0, episode_length=10, seed=3)
    policy = {"to_train": True, "algorithm": "PPO", "lr": 0.001, "num_minibatches": 1,
              "model": {"type": "fully_connected", "fc_dims": [8, 8], "model_ckpt_filepath": ""}}
    cfg = {"name": "tag_continuous", "env": env, "trainer": {"num_envs": 4, "train_batch_size": 40, "num_episodes": 8},
           "policy": {"runner": dict(policy), "tagger": dict(policy)},
           "saving": {"basedir": str(tmp_path), "name": "t", "tag": "t"}}
    wrapper = EnvWrapper(TagContinuous(**env), num_envs=4, env_backend="cpu")
    trainer = Trainer(wrapper, cfg, {"tagger": wrapper.env.taggers, "runner": wrapper.env.runners}, verbose=False)
    yield trainer
    trainer.graceful_close()


def test_cpu_backend_keeps_its_chunks_whatever_the_gpu_setting(cpu_trainer):
    runner = cpu_trainer.policies["runner"]
    cpu_trainer.update_chunk_samples = 7  # a GPU setting: ignored on the cpu backend
    assert cpu_trainer.update_chunk_rows(runner) == cpu_trainer.cpu_chunk_rows(runner.num_agents)
    cpu_trainer.cpu_chunk_samples = 6
    assert cpu_trainer.update_chunk_rows(runner) == 2  # 6 agent-samples // 3 runners
