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


def _memory(monkeypatch, free: int, reserved: int = 0, allocated: int = 0) -> None:
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, 80_000_000))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: reserved)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: allocated)


def test_auto_chunk_samples_takes_a_power_of_two_within_a_fraction_of_free_memory(monkeypatch):
    model = nn.Linear(100, 100)  # 800 bytes per sample
    _memory(monkeypatch, 10_000_000)
    assert int(10_000_000 * 0.6) // 800 == 7500
    assert update_memory.auto_chunk_samples(model, torch.device("cuda", 0)) == 4096
    assert update_memory.auto_chunk_samples(model, torch.device("cuda", 0), fraction=0.1) == 1024  # 1250 -> 1024
    assert update_memory.auto_chunk_samples(model, torch.device("cpu")) is None
    assert update_memory.auto_chunk_samples(nn.ReLU(), torch.device("cuda", 0)) is None


def test_memory_the_caching_allocator_holds_unused_counts_as_available(monkeypatch):
    """The driver reports the allocator's cached blocks as taken: counted alone, the chunks would shrink once the
    cache has grown (the 6.5 s iterations of session 19)."""
    model = nn.Linear(100, 100)
    _memory(monkeypatch, free=1_000_000, reserved=50_000_000, allocated=41_000_000)
    assert update_memory.available_bytes(torch.device("cuda", 0)) == 10_000_000
    assert update_memory.auto_chunk_samples(model, torch.device("cuda", 0)) == 4096
    _memory(monkeypatch, free=1_000_000, reserved=5_000_000, allocated=6_000_000)  # never negative
    assert update_memory.available_bytes(torch.device("cuda", 0)) == 1_000_000


def test_a_gpu_engine_sizes_each_policys_chunks_once(monkeypatch, cpu_trainer):
    """Later updates keep the first size whatever the memory reads then, so the shapes (graphs, compiled code)
    stay the same."""
    engine = cpu_trainer.engine if hasattr(cpu_trainer, "engine") else cpu_trainer
    runner = cpu_trainer.policies["runner"]
    monkeypatch.setattr(engine, "device", torch.device("cuda", 0))
    _memory(monkeypatch, 10_000_000)
    first = engine.update_chunk_rows(runner)
    _memory(monkeypatch, 100_000)
    assert engine.update_chunk_rows(runner) == first
    per_sample = update_memory.activation_bytes_per_sample(runner.model)
    samples = int(10_000_000 * 0.6) // per_sample
    assert first == (1 << (samples.bit_length() - 1)) // runner.num_agents
    engine.update_chunk_samples = 30  # set by hand: used as given
    assert engine.update_chunk_rows(runner) == 30 // runner.num_agents


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
