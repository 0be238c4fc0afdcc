"""The cpu backend's chunked forwards/backwards stay off the GPU path; Tag continuous rollouts
(vectorised NumPy step, neighbour search, sampler) still agree with the CUDA kernels."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _trainer(overrides, tmp_path, backend):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    cfg = load_run_config(get_default_config_path("tag_continuous"),
                          [f"trainer.env_backend={backend}", f"saving.basedir={tmp_path}", "trainer.use_cuda_graph=false",
                           *overrides])
    env = get_example_env_class("tag_continuous")(**cfg.env)
    w = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend=backend)
    return Trainer(w, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, results_dir=str(tmp_path / backend))


def test_gpu_trainer_runs_whole_forwards_and_backwards(tmp_path, monkeypatch):
    import warp_drive.training.algorithms.actor_critic.policy as actor_critic  # where the update is looked up

    t = _trainer(["trainer.num_envs=20", "trainer.train_batch_size=200", "trainer.seed=1"], tmp_path, "pycuda")
    t.cpu_chunk_samples = 1  # would chunk everything on the cpu backend
    assert all(t.rollout.chunk_envs(p) is None for p in t.policies.values())
    assert t.cpu_chunk_rows(100) is None
    seen = []
    real = actor_critic.update_policy
    monkeypatch.setattr(actor_critic, "update_policy", lambda *a, **k: seen.append(k["chunk_rows"]) or real(*a, **k))
    t.train(1)
    # on a GPU the update's chunk size is a memory cap (update_memory.py): far above this minibatch's
    # 10 steps x 20 envs rows, so both policies' forwards and backwards run whole
    assert len(seen) == 2 and all(rows is None or rows >= 200 for rows in seen), seen


def test_tag_continuous_cpu_and_gpu_rollouts_agree(tmp_path):
    """Same seed and weights: the first steps' observations, actions and rewards match."""
    overrides = ["trainer.num_envs=8", "trainer.train_batch_size=80", "trainer.seed=2"]
    g = _trainer(overrides, tmp_path / "g", "pycuda")
    c = _trainer(overrides, tmp_path / "c", "cpu")
    for tag in g.policies:
        c.policies[tag].model.load_state_dict({k: v.cpu() for k, v in g.policies[tag].model.state_dict().items()})
    for t in (g, c):
        t.env_wrapper.reset_all_envs()
        t.generate_rollout()
    for tag in g.policies:
        gb, cb = g.policies[tag].buffers, c.policies[tag].buffers
        np.testing.assert_allclose(gb.obs[:3].cpu().numpy(), cb.obs[:3].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(gb.actions[:3].cpu().numpy(), cb.actions[:3].numpy())
        np.testing.assert_allclose(gb.rewards[:3].cpu().numpy(), cb.rewards[:3].numpy())
