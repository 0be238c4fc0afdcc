"""The training engine's narrow API on the cpu backend, and the boundary around it.

The Trainer's loop is collect -> update_policies -> end_iteration; any driver of those calls trains
the same weights. Other modules of warp_drive/training/ never assign the engine's attributes
(tools/count_cross_module_attrs.py).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import UsageError
from warp_drive.training.trainers.trainer_ddpg import TrainerDDPG
from warp_drive.training.engine import Engine
from warp_drive.training.trainer import Trainer

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "count_cross_module_attrs.py"
#: Cross-module reads of the engine after the refactor of issue 16 (232 reads and 24 writes before);
#: 93 since the learning summary's random-policy comparison (evaluation.py: the wrapper and the policies);
#: 98 since the cpu backend's time probe (long_runs.py: the rollout, wrapper, policies and state of one iteration).
#: 99 since the Lightning CLI stops inside slow iterations (lightning/cli_runs.py: the engine's
#: ``stops_inside_iterations()`` and ``iteration``).
#: 100 since the Trainer holds its engine and forwards nothing (issue 38): the Lightning module reads the config of
#: the Trainer it is given through ``trainer.engine``.
READS_AFTER = 100
POLICY_MAP = {"a": [3, 1], "b": [0, 2]}
#: Public members of the Engine class (issue 25: 42 before, when the Trainer was an Engine with 2.7.1's names;
#: 22 since ``num_iters``, which Lightning reads from the engine instead of a Trainer).
ENGINE_PUBLIC_MEMBERS = 22


def _trainer(tmp_path: Path, name: str = "run", **trainer) -> Trainer:
    pol = {"to_train": True, "algorithm": "PPO", "lr": 0.01, "entropy_coeff": 0.05, "gamma": 0.9,
           "num_minibatches": 2, "model": {"fc_dims": [8]}}
    cfg = {"name": "toy", "trainer": {"num_envs": 4, "train_batch_size": 4 * 10, "num_episodes": 40, "env_backend": "cpu",
                                      "seed": 5, **trainer},
           "policy": {"a": dict(pol), "b": dict(pol, algorithm="A2C", normalize_return=True)},
           "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}
    wrapper = EnvWrapper(ToyLine(num_agents=4, episode_length=10, goal=6.0), num_envs=4, env_backend="cpu")
    return Trainer(wrapper, cfg, POLICY_MAP, verbose=False, results_dir=str(tmp_path / name))


def _weights(engine: Engine) -> list[torch.Tensor]:
    return [q.detach().clone() for p in engine.policies.values() for q in p.model.parameters()]


def test_the_narrow_api_trains_what_trainer_train_trains(tmp_path):
    plain = _trainer(tmp_path, "plain")
    plain.train(3)
    engine = _trainer(tmp_path, "manual")
    engine.start_episodes()
    for _ in range(3):
        engine.update_policies(engine.collect())
        engine.end_iteration()
    for a, b in zip(_weights(plain), _weights(engine)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert engine.iteration == plain.iteration == 3
    assert engine.perf["steps"] == 3 * 40 and engine.perf["total"] >= engine.perf["rollout"] > 0
    assert engine.current_timestep == plain.current_timestep == {"a": 120, "b": 120}


def test_hooks_replace_the_optimizer_step_backward_and_clipping(tmp_path):
    engine = _trainer(tmp_path)
    engine.start_episodes()
    batches = engine.collect()
    calls = {"backward": 0, "clip": [], "step": 0, "sync": []}

    class CountingOptimizer:
        def __init__(self, opt):
            self.opt = opt

        def zero_grad(self, set_to_none=True):
            self.opt.zero_grad(set_to_none=set_to_none)

        def step(self):
            calls["step"] += 1
            self.opt.step()

    def backward(loss):
        calls["backward"] += 1
        loss.backward()

    optimizers = {tag: CountingOptimizer(p.optimizer) for tag, p in engine.policies.items()}
    metrics = engine.update_policies(batches, optimizers=optimizers, backward=backward,
                                     clip_gradients=lambda opt, max_norm: calls["clip"].append(max_norm),
                                     sync_normalizers=lambda norms: calls["sync"].append(len(norms)))
    steps = sum(p.config.num_epochs * p.config.num_minibatches for p in engine.policies.values())
    assert steps > 2 and calls["step"] == calls["backward"] == len(calls["clip"]) == steps
    assert set(calls["clip"]) == {engine.policies["a"].config.max_grad_norm} and calls["sync"] == [2]
    assert set(metrics) == {"a", "b"} and all(torch.isfinite(m["loss"]) for m in metrics.values())


def test_call_order_mistakes_are_usage_errors(tmp_path):
    engine = _trainer(tmp_path)
    with pytest.raises(UsageError, match="collect"):
        engine.update_policies({})
    batches = engine.collect()
    with pytest.raises(UsageError, match=r"no entry for trained policies \['b'\]"):
        engine.update_policies({"a": batches["a"]})


def test_state_dict_resumes_the_same_run(tmp_path):
    first = _trainer(tmp_path, "first")
    first.train(2)
    state = copy.deepcopy(first.state_dict())  # like state_dict() of torch modules: references, not copies
    second = _trainer(tmp_path, "second")
    second.load_state_dict(state)
    assert second.iteration == 2 and second.started
    first.train(1)
    second.train(1)
    for a, b in zip(_weights(first), _weights(second)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_evaluation_restores_the_sampling_mode_and_restarts_episodes(tmp_path):
    engine = _trainer(tmp_path)
    assert not engine.deterministic and not engine.started
    out = engine.evaluate(deterministic=True)
    assert set(out) == {"a", "b"} and not engine.deterministic and engine.started


def test_the_trainer_has_an_engine_whose_surface_is_narrow(tmp_path):
    """2.7.1's Trainer (Trainer271) holds an engine; the engine's public surface is this project's own."""
    t = _trainer(tmp_path)
    assert isinstance(t.engine, Engine) and not isinstance(t, Engine) and issubclass(TrainerDDPG, Trainer)
    assert t.policies is t.engine.policies and t.iteration == t.engine.iteration
    public = sorted(n for n in dir(Engine) if not n.startswith("_"))
    for name in ("cuda_envs", "models", "current_timestep", "training_batch_size_per_env", "perf_stats",
                 "evaluate_episodes", "fetch_episode_states", "save_model_checkpoint", "load_model_checkpoint",
                 "num_devices", "save_dir", "log_metrics"):
        assert name not in public and hasattr(t, name), name
    assert len(public) <= ENGINE_PUBLIC_MEMBERS, public


def test_the_plain_trainer_holds_the_engine_and_forwards_none_of_its_names(tmp_path):
    """Issue 38: ``Trainer`` = engine + run folder + loop + checkpoint schedule; callers write ``trainer.engine.X``.
    2.7.1's names (the engine's on the trainer, ``cuda_envs``, ...) are only Trainer271's, the class at 2.7.1's
    paths; ``build_trainer`` returns the plain one."""
    from warp_drive.training.run.build import build_trainer
    from warp_drive.training.run.trainer import Trainer as PlainTrainer
    from warp_drive.training.run.trainer271 import Trainer271

    assert Trainer is Trainer271 and issubclass(Trainer271, PlainTrainer)
    engine_names = {n for n in dir(Engine) if not n.startswith("_")}
    plain_names = {n for n in dir(PlainTrainer) if not n.startswith("_")}
    # no forwards: state_dict is the Trainer's own (the engine's plus the run folder and the periodic evaluation)
    assert engine_names & plain_names == {"state_dict"}, sorted(engine_names & plain_names)
    for name in ("cuda_envs", "models", "fetch_episode_states", "load_model_checkpoint", "actor_models", "policies"):
        assert name not in plain_names and hasattr(Trainer271, name), name
    cfg = {"name": "toy", "env": {"num_agents": 4, "episode_length": 10, "goal": 6.0},
           "trainer": {"num_envs": 4, "train_batch_size": 40, "num_episodes": 8, "seed": 5},
           "policy": {"shared": {"algorithm": "A2C", "model": {"fc_dims": [8]}}},
           "saving": {"basedir": str(tmp_path)}}
    from warp_drive.config import load_run_config

    plain = build_trainer(load_run_config(cfg), ToyLine, backend="cpu", results_dir=tmp_path / "plain", verbose=False)
    assert type(plain) is PlainTrainer and not hasattr(plain, "policies")
    for name in ("engine", "save_dir", "num_iters", "train", "save_checkpoint", "load_checkpoint", "graceful_close",
                 "evaluate", "state_dict"):
        assert hasattr(plain, name), name
    plain.train(1)
    assert plain.engine.iteration == 1 and plain.engine.policies["shared"].timestep == 40


# ----------------------------------------------------------------------------- the boundary
def _run_tool(*args: str) -> dict:
    proc = subprocess.run([sys.executable, str(TOOL), "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_no_module_writes_the_engine_and_reads_do_not_grow():
    counts = _run_tool()
    writes = {m: c["writes"] for m, c in counts["modules"].items() if c["writes"]}
    assert counts["writes"] == 0, writes
    assert counts["reads"] <= READS_AFTER, counts["modules"]


def test_the_tool_counts_reads_writes_and_aliases(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "lightning").mkdir(parents=True)
    (pkg / "user.py").write_text(textwrap.dedent("""
        def f(trainer):
            trainer.perf["steps"] = 1          # write
            trainer.iteration += 1             # write
            t = trainer
            return t.policies, t.collect()     # one read (a method call is not one)

        class Rollout:
            def __init__(self, trainer):
                self.t = trainer
            def g(self):
                self.t.started = True          # write
                return self.t.config           # read
    """))
    (pkg / "lightning" / "module.py").write_text(textwrap.dedent("""
        def hook(trainer, pl_module):
            trainer.world_size                 # Lightning's Trainer: not counted
            pl_module.engine.iteration = 3     # write
    """))
    (pkg / "engine.py").write_text("class Engine:\n    def f(self, engine):\n        engine.x = 1\n")  # defining module
    counts = _run_tool("--root", str(pkg))
    assert counts["writes"] == 4 and counts["reads"] == 2
    assert counts["modules"]["user.py"]["writes"] == {"perf": 1, "iteration": 1, "started": 1}
