"""Training on the GPU backend: short runs of the example configs, determinism, CPU/GPU agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def _trainer(env_name, overrides, tmp_path, backend="pycuda"):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    cfg = load_run_config(get_default_config_path(env_name), [f"trainer.env_backend={backend}", f"saving.basedir={tmp_path}", *overrides])
    env = get_example_env_class(env_name)(**cfg.env)
    w = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend=backend)
    return Trainer(w, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, results_dir=str(tmp_path / backend))


@pytest.mark.parametrize("env_name", ["tag_continuous", "tag_gridworld", "cartpole", "pendulum"])
def test_short_training_runs_have_finite_losses(env_name, tmp_path):
    t = _trainer(env_name, ["trainer.num_envs=50", "trainer.train_batch_size=1600", "trainer.num_episodes=1000",
                            "saving.metrics_log_freq=2", "trainer.seed=5"], tmp_path)
    m = t.train(4)
    losses = {k: v for k, v in m.items() if k.endswith("/loss")}
    assert losses and all(math.isfinite(v) for v in losses.values()), m
    assert m["perf/env_steps_per_s"] > 0


def test_training_is_deterministic_given_the_seed(tmp_path):
    runs = []
    for i in range(2):
        t = _trainer("cartpole", ["trainer.num_envs=32", "trainer.train_batch_size=640", "trainer.seed=11"], tmp_path / str(i))
        t.train(3)
        runs.append([p.detach().cpu().clone() for p in t.policies[t.config.policy_tags[0]].model.parameters()])
    for a, b in zip(*runs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_gpu_and_cpu_rollouts_agree(tmp_path):
    """Same seed, same weights: the first rollout's actions and rewards match across backends."""
    g = _trainer("cartpole", ["trainer.num_envs=16", "trainer.train_batch_size=320", "trainer.seed=2"], tmp_path / "g")
    c = _trainer("cartpole", ["trainer.num_envs=16", "trainer.train_batch_size=320", "trainer.seed=2"], tmp_path / "c", backend="cpu")
    tag = g.config.policy_tags[0]
    c.policies[tag].model.load_state_dict({k: v.cpu() for k, v in g.policies[tag].model.state_dict().items()})
    for t in (g, c):
        t.env_wrapper.reset_all_envs()
        t.generate_rollout()
    gb, cb = g.policies[tag].buffers, c.policies[tag].buffers
    # actions may diverge once probabilities differ in the last bit; compare the first steps
    np.testing.assert_array_equal(gb.actions[:5].cpu().numpy(), cb.actions[:5].numpy())
    np.testing.assert_allclose(gb.rewards[:5].cpu().numpy(), cb.rewards[:5].numpy())


def test_cuda_graphs_train_the_eager_weights(tmp_path):
    """Same seed: with trainer.use_cuda_graph (graph-replayed rollouts and minibatch steps) a run
    trains exactly the weights of the eager run (on CUDA both step Adam in its capturable form)."""
    runs = {}
    for graph in (False, True):
        t = _trainer("tag_continuous", ["trainer.num_envs=8", "trainer.train_batch_size=400", "trainer.seed=4",
                                        "env.num_runners=20", "env.episode_length=100", f"trainer.use_cuda_graph={graph}"],
                     tmp_path / str(graph))
        t.train(4)
        assert (t.graphed_rollout is not None and t.graphed_rollout.captured) == graph
        assert all((p.graphed is not None) == graph for p in t.policies.values())
        runs[graph] = [q.detach().clone() for p in t.policies.values() for q in p.model.parameters()]
    for a, b in zip(runs[False], runs[True]):
        assert torch.equal(a, b)


@pytest.mark.parametrize("inputs", [["policy.shared.algorithm=MAPPO", "policy.shared.critic_input=global_state"],
                                    ["policy.shared.critic_input=all_obs", "policy.shared.actor_input=obs_agent_id"]],
                         ids=["mappo_global_state", "all_obs_agent_id"])
def test_cuda_graphs_train_the_eager_weights_with_a_separate_critic(tmp_path, inputs):
    """What a network sees (critic_input, actor_input) is composed inside the captured rollout and read by the
    captured update: the graphed run trains the eager run's weights (simple_spread, its `state` array)."""
    runs = {}
    for graph in (False, True):
        t = _trainer("mpe_simple_spread", ["trainer.num_envs=8", "trainer.train_batch_size=400", "trainer.seed=4",
                                           "policy.shared.num_minibatches=2", f"trainer.use_cuda_graph={graph}", *inputs],
                     tmp_path / str(graph))
        t.train(4)
        assert (t.graphed_rollout is not None and t.graphed_rollout.captured) == graph
        assert all((p.graphed is not None) == graph for p in t.policies.values())
        assert type(t.policies["shared"].model).__name__ == "FullyConnectedSeparateCritic"
        runs[graph] = [q.detach().clone() for p in t.policies.values() for q in p.model.parameters()]
    for a, b in zip(runs[False], runs[True]):
        assert torch.equal(a, b)


def test_engine_calls_train_what_trainer_train_trains(tmp_path):
    """collect -> update_policies -> end_iteration (the calls the Lightning module makes) with CUDA
    graphs train the weights Trainer.train trains."""
    runs = []
    for manual in (False, True):
        t = _trainer("tag_continuous", ["trainer.num_envs=8", "trainer.train_batch_size=400", "trainer.seed=4",
                                        "env.num_runners=20", "env.episode_length=100", "trainer.use_cuda_graph=true"],
                     tmp_path / str(manual))
        if manual:
            t.start_episodes()
            for _ in range(4):
                t.update_policies(t.collect())
                t.end_iteration()
            assert t.graphed_rollout is not None and t.graphed_rollout.captured
        else:
            t.train(4)
        assert t.iteration == 4 and t.perf["steps"] == 4 * 400
        runs.append([q.detach().clone() for p in t.policies.values() for q in p.model.parameters()])
    for a, b in zip(*runs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_two_gpu_nccl_training(tmp_path):
    """The distributed worker on 2 GPUs with NCCL (skipped with fewer GPUs)."""
    import subprocess
    import sys
    from pathlib import Path

    if torch.cuda.device_count() < 2:
        pytest.skip("needs >= 2 GPUs")
    worker = Path(__file__).resolve().parents[1] / "helpers" / "ddp_worker.py"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(worker), str(tmp_path), "pycuda"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "ok_0").is_file() and (tmp_path / "ok_1").is_file()
