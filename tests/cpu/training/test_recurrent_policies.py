"""Recurrent (GRU) A2C/PPO policies end to end on the cpu backend (issue 38 item 2): a memory task an MLP cannot
solve, checkpoints, the cpu pipeline's env parts, Lightning, DDP over two processes (gloo), and the graphed
update's step, emulated on the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.cue_env import CueRecall, cue_observations
from tests.helpers.threads import torch_threads
from tests.helpers.training_state import same_to_float_rounding, trainer_state
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import CheckpointError
from warp_drive.training.algorithms.actor_critic import graphed_update
from warp_drive.training.algorithms.actor_critic.update import update_policy
from warp_drive.training.trainer import Trainer
from warp_drive.training.utils.minibatch import minibatch_indices

ROOT = Path(__file__).resolve().parents[3]
L = 4  # cue-recall episode length
GRU = {"type": "gru", "fc_dims": [16], "kwargs": {"hidden_size": 16}}
MLP = {"type": "fully_connected", "fc_dims": [16]}


def policy(model: dict, **kw) -> dict:
    return {"to_train": True, "algorithm": "PPO", "lr": 0.01, "num_minibatches": 2, "num_epochs": 4,
            "entropy_coeff": 0.01, "gamma": 0.9, "gae_lambda": 0.95, "normalize_advantage": True, "vf_loss_coeff": 0.5,
            "model": model, **kw}


def cue(tmp_path: Path, model: dict, envs: int = 32, steps: int = 16, seed: int = 1, env_class: type = CueRecall,
        **kw) -> Trainer:
    cfg = {"name": "cue", "trainer": {"num_envs": envs, "train_batch_size": envs * steps, "num_episodes": 10**4,
                                      "env_backend": "cpu", "seed": seed, "bootstrap_at_time_limit": False},
           "policy": {"a": policy(model, **kw)},
           "saving": {"metrics_log_freq": 10**6, "model_params_save_freq": 10**6, "basedir": str(tmp_path)}}
    wrapper = EnvWrapper(env_class(num_agents=2, episode_length=L, seed=seed), num_envs=envs, env_backend="cpu")
    return Trainer(wrapper, cfg, {"a": [0, 1]}, verbose=False, results_dir=str(tmp_path / "run"))


def test_a_gru_policy_remembers_the_cue_an_mlp_policy_cannot(tmp_path):
    """Cue recall (tests/helpers/cue_env.py): the cue is seen at an episode's first step only and matched for a
    reward at every step. 25 PPO updates of 32 envs x 16 steps each (about 3 s on one thread): the GRU policy's
    greedy episodes score L = 4 (measured: 4.0, seeds 1-4); the MLP's stay near what
    guessing gives, 1 + (L - 1) / 2 = 2.5 (measured 2.41-2.63). The GRU's host rollouts (numpy_policy, the render
    callbacks') carry the cue too."""
    from warp_drive.training.lightning.callbacks import numpy_policy

    results = {}
    with torch_threads(1):  # tiny models: more threads only add contention
        for name, model in (("gru", GRU), ("mlp", MLP)):
            t = cue(tmp_path / name, model)
            t.train(25)
            results[name] = float(np.mean(t.evaluate(deterministic=True, num_episodes=4)["a"]["episode_return"]))
            if name == "gru":
                act = numpy_policy(t.engine, deterministic=True)
                for c in ([0, 1], [1, 0], [1, 1]):
                    seen = cue_observations(np.array(c))
                    actions = [act(seen if step == 0 else np.zeros_like(seen), step)[:, 0] for step in range(L)]
                    assert all(list(a) == c for a in actions), (c, actions)
    assert results["gru"] > 3.9 and results["mlp"] < 2.8, results


def _weights(t: Trainer) -> torch.Tensor:
    return torch.cat([q.detach().reshape(-1) for q in t.policies["a"].model.parameters()])


def test_a_checkpoint_resumes_the_weights_and_the_carried_states(tmp_path):
    a = cue(tmp_path / "a", GRU, envs=4, critic_input="all_obs")
    a.train(2)
    path = a.save_checkpoint()
    b = cue(tmp_path / "b", GRU, envs=4, critic_input="all_obs")
    b.load_checkpoint(path)
    torch.testing.assert_close(b.policies["a"].carried.hidden, a.policies["a"].carried.hidden, rtol=0, atol=0)
    a.train(2)
    b.train(2)
    torch.testing.assert_close(_weights(b), _weights(a), rtol=0, atol=0)
    torch.testing.assert_close(b.policies["a"].carried.hidden, a.policies["a"].carried.hidden, rtol=0, atol=0)


def test_a_gru_checkpoint_into_an_mlp_config_and_back_is_a_typed_error(tmp_path):
    gru = cue(tmp_path / "gru", GRU, envs=4)
    gru.train(1)
    path = gru.save_checkpoint()
    mlp = cue(tmp_path / "mlp", {**MLP, "fc_dims": [16, 16]}, envs=4)
    with pytest.raises(CheckpointError, match=r"policy 'a': the checkpoint holds a recurrent model .*model.type="
                                              r"fully_connected is an MLP model. Set `policy.a.model.type`"):
        mlp.policies["a"].load_state_dict(gru.policies["a"].state_dict())
    with pytest.raises(CheckpointError, match=r'policy.a.model.type: checkpoint "gru", now "fully_connected"'):
        mlp.load_checkpoint(path)  # the run's resume compares the settings first
    with pytest.raises(CheckpointError, match=r"the checkpoint holds an MLP model .*model.type=gru is a recurrent"):
        gru.policies["a"].load_state_dict(mlp.policies["a"].state_dict())


class OneThreadCue(CueRecall):
    """The cue env without the env-parts opt-in: the plain rollout loop."""

    numpy_step_is_env_separable = False


def test_the_env_parts_carry_the_state_as_the_plain_loop_does(tmp_path):
    """The cpu pipeline (two threads, one block of envs each) gives the plain loop's rollouts, carried states and
    weights (to float32 rounding, as tests/cpu/training/test_cpu_pipeline.py compares)."""
    from warp_drive.training.engine.cpu_pipeline import why_not_parts

    with torch_threads(2):
        parts = cue(tmp_path / "parts", GRU, envs=8, critic_input="all_obs")
        plain = cue(tmp_path / "plain", GRU, envs=8, critic_input="all_obs", env_class=OneThreadCue)
        assert why_not_parts(parts.engine.rollout) is None and why_not_parts(plain.engine.rollout) is not None
        parts.train(3)
        plain.train(3)
    a, b = trainer_state(parts), trainer_state(plain)
    a["carried"], b["carried"] = parts.policies["a"].carried.hidden, plain.policies["a"].carried.hidden
    assert a.keys() == b.keys() and "a.start_state" in a and "a.episode_starts" in a
    for key in a:
        assert same_to_float_rounding(a[key], b[key]), key


def test_lightning_trains_a_recurrent_policy_as_the_trainer_does(tmp_path):
    pytest.importorskip("lightning", reason="PyTorch Lightning is not installed")
    from warp_drive.training.lightning import WarpDriveDataModule, WarpDriveModule, build_lightning_trainer

    plain = cue(tmp_path / "plain", GRU, envs=4)
    engine = cue(tmp_path / "lightning", GRU, envs=4)
    with torch_threads(1):
        plain.train(3)
        module = WarpDriveModule(engine, iterations_per_epoch=1)
        trainer = build_lightning_trainer(module, max_epochs=3, default_root_dir=str(tmp_path), loggers=False,
                                          enable_progress_bar=False, enable_model_summary=False, checkpoint=False,
                                          perf_stats=False)
        trainer.fit(module, datamodule=WarpDriveDataModule(module))
    assert engine.iteration == plain.iteration == 3
    torch.testing.assert_close(_weights(engine), _weights(plain), rtol=0, atol=0)
    torch.testing.assert_close(engine.policies["a"].carried.hidden, plain.policies["a"].carried.hidden, rtol=0, atol=0)


def test_ddp_on_two_cpu_processes_all_reduces_a_recurrent_policy(tmp_path):
    worker = ROOT / "tests" / "helpers" / "ddp_gru_worker.py"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(worker), str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1",
                                                                                **dict(__import__("os").environ)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-4000:]
    assert (tmp_path / "ok_0").is_file() and (tmp_path / "ok_1").is_file()


def test_the_graphed_update_step_is_the_eager_step_on_sequences(tmp_path, monkeypatch):
    """The CUDA-graph update (graphed_update.py) replays one captured minibatch step over index-selected rows of
    views of the buffers; for a recurrent policy the rows are env x agent sequences. Its step, run eagerly on
    the CPU (capture skipped), gives the eager update's weights: the same minibatches, the same loss."""
    monkeypatch.setattr(graphed_update.GraphedUpdate, "_capture", lambda self: (None, [], None))
    eager = cue(tmp_path / "eager", GRU, envs=4, critic_input="all_obs")
    graphed = cue(tmp_path / "graphed", GRU, envs=4, critic_input="all_obs")
    for t in (eager, graphed):
        t.train(1)
        t.generate_rollout()
    p, q = eager.policies["a"], graphed.policies["a"]
    update_policy(p.model, p.optimizer, p.algorithm, p.batch(), timestep=0, num_epochs=1, num_minibatches=2,
                  generator=torch.Generator().manual_seed(7))
    step = graphed_update.GraphedUpdate(q.model, q.optimizer, q.algorithm, q.batch(), num_minibatches=2,
                                        max_grad_norm=None, autocast_dtype=None)
    assert step.num_samples == 4 * 2 and step.flat["start_state"].shape == (8, 32)  # sequences, both GRUs' states
    assert step.flat["obs"]["actor"].data_ptr() == q.buffers.obs["actor"].data_ptr()  # views: what a replay reads
    step.coefficients.copy_(torch.tensor(q.algorithm.coefficients(0)))
    for chunk in minibatch_indices(step.num_samples, 2, generator=torch.Generator().manual_seed(7)):
        step.index.copy_(chunk)
        q.optimizer.zero_grad(set_to_none=True)
        step._step()
    torch.testing.assert_close(_weights(graphed), _weights(eager), rtol=0, atol=1e-6)
