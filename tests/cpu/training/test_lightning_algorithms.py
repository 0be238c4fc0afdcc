"""Lightning trains every registered algorithm through the same calls (issue 25 item 1): DDPG (two
optimizers, target networks, OU noise) on the bundled Pendulum env, cpu backend: same weights as
``Trainer.train``, a Lightning checkpoint that resumes exactly, the Lightning CLI, one PPO and one
DDPG policy in one run, and the engine entry of the checkpoint (format 2; format 1, written for
A2C/PPO before, still loads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")

from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402

from tests.cpu.training.test_ddpg import _pendulum_config  # noqa: E402
from tests.cpu.training.test_lightning import _engine as _toy_engine  # noqa: E402
from tests.cpu.training.test_lightning import _fit  # noqa: E402
from tests.helpers.threads import torch_threads  # noqa: E402
from tests.helpers.toy_env import ToyLine  # noqa: E402
from warp_drive.vocab.constants import Constants  # noqa: E402
from warp_drive.env.env_wrapper import EnvWrapper  # noqa: E402
from warp_drive.errors import ConfigError  # noqa: E402
from warp_drive.training.lightning import CHECKPOINT_KEY, WarpDriveModule  # noqa: E402
from warp_drive.training.lightning.engine_state import REF  # noqa: E402
from warp_drive.training.trainer import Trainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
ENVS, STEPS = 8, 10  # one rollout = one whole episode: resuming at an iteration boundary restarts nothing
NETS = ("actor", "critic", "target_actor", "target_critic")


@pytest.fixture(autouse=True)
def _one_thread():
    with torch_threads(1):
        yield


def _ddpg_config(tmp_path, iters=4):
    cfg = _pendulum_config(tmp_path, envs=ENVS, steps=STEPS, iters=iters, model={
        "actor": {"type": "fully_connected_actor", "fc_dims": [16, 16], "output_w": 2.0},
        "critic": {"type": "fully_connected_action_value_critic", "fc_dims": [16, 16]},
        "model_ckpt_filepath": {"actor": "", "critic": ""}})
    cfg["env"] = {"episode_length": STEPS}
    cfg["trainer"]["num_episodes"] = iters * ENVS
    return cfg


def _ddpg_engine(tmp_path, iters=4) -> Trainer:
    from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv

    # reset_pool_size 0: every reset restores each env's own start state, so the forced reset of
    # every env when Lightning starts (resumed or not) is the reset the rollout did after its last step
    env = ClassicControlPendulumEnv(episode_length=STEPS, reset_pool_size=0, seed=1)
    return Trainer(EnvWrapper(env, num_envs=ENVS, env_backend="cpu"), _ddpg_config(tmp_path, iters), verbose=False,
                   results_dir=str(tmp_path / "engine"))


def _ddpg_state(engine):
    """Every tensor a DDPG policy holds: its four networks, both optimizers' states, the OU state."""
    p = engine.policies["shared"]
    out = {f"{net}.{k}": v.detach().clone() for net in NETS for k, v in getattr(p.nets, net).state_dict().items()}
    for name, opt in p.optimizers().items():
        for i, s in opt.state_dict()["state"].items():
            out.update({f"{name}_optimizer.{i}.{k}": v.clone() for k, v in s.items()})
    out["ou"] = p.ou.state.clone()
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)


def test_ddpg_lightning_update_is_the_trainer_update(tmp_path):
    """Same seed: Trainer.train and Lightning (the policy's two optimizers, Lightning's wrappers of
    them) give bit-identical networks, targets, optimizer states and OU state."""
    plain = _ddpg_engine(tmp_path / "plain")
    plain.train(3)
    module = WarpDriveModule(_ddpg_engine(tmp_path / "lightning"), iterations_per_epoch=1)
    assert module.num_optimizers == 2
    assert [type(o).__name__ for o in module.configure_optimizers()] == ["Adam", "Adam"]
    assert sorted({k.split(".")[2] for k in module.state_dict()}) == ["actor", "critic"]
    _fit(module, tmp_path / "lightning", max_epochs=3, checkpoint=False, perf_stats=False, log_every_n_steps=1,
         loggers=["csv"])
    _assert_same(_ddpg_state(plain), _ddpg_state(module.engine))
    assert module.engine.iteration == plain.iteration == 3
    assert module.engine.policies["shared"].timestep == plain.policies["shared"].timestep == 3 * ENVS * STEPS
    metrics = module.trainer.callback_metrics
    for key in ("shared/critic_loss", "shared/actor_loss", "shared/lr", "shared/lr_critic"):
        assert key in metrics and torch.isfinite(metrics[key]), key


def test_ddpg_lightning_checkpoint_resumes_exactly(tmp_path):
    """A Lightning checkpoint of a DDPG run holds the actor and critic (Lightning's state_dict), both
    optimizers (Lightning's optimizer_states) and the policy's other state (targets, OU noise) in
    the engine entry, whose copies of the weights and optimizer states are references; it resumes
    to what the uninterrupted run has."""
    every = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = WarpDriveModule(_ddpg_engine(tmp_path / "a"), iterations_per_epoch=1)
    _fit(full, tmp_path / "a", max_epochs=4, checkpoint=every)
    saved = tmp_path / "ckpt" / "epoch=1.ckpt"

    ckpt = torch.load(saved, weights_only=True)
    assert len(ckpt["optimizer_states"]) == 2
    entry = ckpt[CHECKPOINT_KEY]
    assert entry["format_version"] == 2 and entry["iteration"] == 2
    policy = entry["ranks"][0]["policies"]["shared"]
    assert policy["model"]["policy_head.weight"] == {REF: ["state_dict", "policy_models.shared.actor.policy_head.weight"]}
    assert all(set(v) == {REF} for v in policy["nets"]["critic"].values())  # no second copy of the weights
    assert isinstance(policy["nets"]["target_critic"]["vf_head.weight"], torch.Tensor)  # only here
    assert policy["nets"]["critic_optimizer"]["state"][0]["exp_avg"] == {REF: ["optimizer_states", 1, "state", 0, "exp_avg"]}

    resumed = WarpDriveModule(_ddpg_engine(tmp_path / "b"), iterations_per_epoch=1)
    _fit(resumed, tmp_path / "b", max_epochs=4, ckpt_path=str(saved), checkpoint=False)
    _assert_same(_ddpg_state(full.engine), _ddpg_state(resumed.engine))
    assert resumed.engine.iteration == 4 and resumed.engine.policies["shared"].timestep == 4 * ENVS * STEPS

    # outside fit: the policy state as saved at iteration 2
    fresh = WarpDriveModule(_ddpg_engine(tmp_path / "c"))
    fresh.restore_checkpoint(saved)
    p = fresh.engine.policies["shared"]
    assert fresh.engine.iteration == 2 and p.timestep == 2 * ENVS * STEPS
    torch.testing.assert_close(p.nets.target_critic.state_dict()["vf_head.weight"],
                               policy["nets"]["target_critic"]["vf_head.weight"], rtol=0, atol=0)
    torch.testing.assert_close(p.ou.state, policy["algorithm"]["ou"], rtol=0, atol=0)
    torch.testing.assert_close(p.nets.critic_optimizer.state_dict()["state"][0]["exp_avg"],
                               ckpt["optimizer_states"][1]["state"][0]["exp_avg"], rtol=0, atol=0)


def _write_ddpg_config(tmp_path, iters=2) -> Path:
    import yaml

    cfg = _ddpg_config(tmp_path, iters=iters)
    cfg["name"] = "ClassicControlPendulumEnv"
    path = tmp_path / "ddpg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_lightning_cli_trains_and_resumes_the_algorithm_of_the_config(tmp_path):
    """``python -m warp_drive.training.lightning.train --config <a DDPG config>``: the algorithm comes
    from the config; the run resumes from its last.ckpt."""
    from warp_drive.cli import lightning_train as cli

    base = ["--config", str(_write_ddpg_config(tmp_path)), "--backend", "cpu", "--quiet", "--iterations-per-epoch", "1",
            "--results-dir", str(tmp_path / "runs"), "--summary", "--log-every-n-steps", "1"]
    assert cli.main([*base, "--max-epochs", "2"]) == 0
    assert cli.main([*base, "--max-epochs", "3", "--resume", "last"]) == 0
    summary = json.loads((tmp_path / "runs" / "rank0_summary.json").read_text())
    assert summary["iteration"] == 3
    assert all(np.isfinite(summary["metrics"][k]) for k in ("shared/critic_loss", "shared/actor_loss"))


def test_ddpg_under_ddp_on_two_cpu_processes(tmp_path):
    """strategy='ddp' (gloo) with one DDPG policy: its two optimizers need find_unused_parameters,
    which setup() sets (the builder cannot count optimizers before the engine exists); the ranks
    keep equal weights, act with their own noise, and resume from last.ckpt."""
    cmd = [sys.executable, "-m", "warp_drive.training.lightning.train", "--config", str(_write_ddpg_config(tmp_path)),
           "--backend", "cpu", "--devices", "2", "--strategy", "ddp", "--max-epochs", "2", "--iterations-per-epoch", "1",
           "--results-dir", str(tmp_path / "runs"), "--summary", "--log-every-n-steps", "1", "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    for extra in ([], ["--max-epochs", "3", "--resume", "last"]):
        proc = subprocess.run(cmd + extra, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / "runs" / f"rank{r}_summary.json").read_text()) for r in (0, 1)]
    assert [r["iteration"] for r in ranks] == [3, 3]
    assert ranks[0]["weights_checksum"] == ranks[1]["weights_checksum"]  # gradients were all-reduced
    assert ranks[0]["sampler_seed"] != ranks[1]["sampler_seed"]
    assert np.isfinite(ranks[0]["metrics"]["shared/critic_loss"])


def test_format_1_entries_of_a2c_ppo_checkpoints_still_load(tmp_path):
    """Format 1 (written before every algorithm trained through Lightning) held each policy's
    ``algorithm`` state per rank; such a checkpoint resumes as before."""
    every = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = WarpDriveModule(_toy_engine(tmp_path / "a"), iterations_per_epoch=1)
    _fit(full, tmp_path / "a", max_epochs=3, checkpoint=every)
    ckpt = torch.load(tmp_path / "ckpt" / "epoch=1.ckpt", weights_only=True)
    entry = ckpt[CHECKPOINT_KEY]
    for rank in entry["ranks"]:  # the layout of format 1
        rank["algorithms"] = {tag: state["algorithm"] for tag, state in rank.pop("policies").items()}
    entry["format_version"] = 1
    old = tmp_path / "format1.ckpt"
    torch.save(ckpt, old)

    resumed = WarpDriveModule(_toy_engine(tmp_path / "b"), iterations_per_epoch=1)
    _fit(resumed, tmp_path / "b", max_epochs=3, ckpt_path=str(old), checkpoint=False)
    for tag, p in full.engine.policies.items():
        q = resumed.engine.policies[tag]
        for a, b in zip(p.model.parameters(), q.model.parameters()):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        torch.testing.assert_close(p.state_dict()["algorithm"], q.state_dict()["algorithm"], rtol=0, atol=0)
    entry["format_version"] = 7
    torch.save(ckpt, old)
    with pytest.raises(ConfigError, match="format 7"):
        WarpDriveModule(_toy_engine(tmp_path / "c")).restore_checkpoint(old)


class ToyReach(ToyLine):
    """ToyLine with continuous moves: ``x += clip(a, -1, 1)`` (Box actions); episodes end at the time limit."""

    name = "ToyReach"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.action_space = {a: spaces.Box(-1.0, 1.0, (1,), np.float32) for a in range(self.num_agents)}

    def numpy_step(self, data: dict) -> None:
        x = data["x"]
        x[:] = np.clip(x + np.clip(data[Constants.ACTIONS][..., 0], -1.0, 1.0), 0.0, np.float32(self.length))
        data[Constants.OBSERVATIONS][..., 0] = x / np.float32(self.length)
        data[Constants.REWARDS][:] = -np.abs(x - np.float32(data["goal"]))
        data[Constants.TIMESTEP][:] += 1
        data[Constants.DONE][data[Constants.TIMESTEP] >= data["episode_length"]] = 1


def _mixed_engine(tmp_path) -> Trainer:
    ddpg = _ddpg_config(tmp_path)["policy"]["shared"]
    cfg = {"name": "toy", "trainer": {"num_envs": ENVS, "train_batch_size": ENVS * STEPS, "num_episodes": ENVS * 4,
                                      "env_backend": "cpu", "seed": 3, "n_step": 2},
           "policy": {"ppo": {"to_train": True, "algorithm": "PPO", "lr": 0.01, "num_minibatches": 2,
                              "normalize_return": True, "model": {"fc_dims": [16]}},
                      "ddpg": dict(ddpg, num_minibatches=2)},
           "sampler": {"params": {"damping": 0.15, "stddev": 0.2, "scale": 1.0}},
           "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 100000, "basedir": str(tmp_path)}}
    wrapper = EnvWrapper(ToyReach(num_agents=2, episode_length=STEPS, goal=6.0), num_envs=ENVS, env_backend="cpu")
    return Trainer(wrapper, cfg, {"ppo": [0], "ddpg": [1]}, verbose=False, results_dir=str(tmp_path / "engine"))


def _all_state(engine):
    """Every tensor of every policy's own checkpoint entry."""
    from warp_drive.training.lightning.engine_state import _walk

    return {"/".join(map(str, path)): t.detach().clone() for tag, p in engine.policies.items()
            for path, t in _walk(p.state_dict(), (tag,))}


def test_one_ppo_and_one_ddpg_policy_train_and_resume_through_lightning(tmp_path):
    """A run mixing algorithms: the optimizers in policy then name order (PPO's one, DDPG's actor
    and critic), the Trainer's weights, and an exact resume."""
    plain = _mixed_engine(tmp_path / "plain")
    plain.train(3)
    every = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = WarpDriveModule(_mixed_engine(tmp_path / "a"), iterations_per_epoch=1)
    assert full._optimizer_keys == [("ppo", "policy"), ("ddpg", "actor"), ("ddpg", "critic")]
    _fit(full, tmp_path / "a", max_epochs=3, checkpoint=every)
    _assert_same(_all_state(plain), _all_state(full.engine))

    resumed = WarpDriveModule(_mixed_engine(tmp_path / "b"), iterations_per_epoch=1)
    _fit(resumed, tmp_path / "b", max_epochs=3, ckpt_path=str(tmp_path / "ckpt" / "epoch=0.ckpt"), checkpoint=False)
    _assert_same(_all_state(full.engine), _all_state(resumed.engine))


def _sac_engine(tmp_path) -> Trainer:
    from example_envs.classic_control.pendulum.pendulum import ClassicControlPendulumEnv

    cfg = {"name": "ClassicControlPendulumEnv", "env": {"episode_length": STEPS},
           "trainer": {"num_envs": ENVS, "train_batch_size": ENVS * STEPS, "num_episodes": 4 * ENVS, "env_backend": "cpu",
                       "seed": 1},
           "policy": {"shared": {"to_train": True, "algorithm": "SAC", "batch_size": 32, "buffer_size": 1000,
                                 "learning_starts": ENVS * STEPS, "gradient_steps": 2,
                                 "model": {"actor": {"fc_dims": [16, 16]}, "critic": {"fc_dims": [16, 16]}}}},
           "saving": {"metrics_log_freq": 10**6, "model_params_save_freq": 10**6, "basedir": str(tmp_path)}}
    env = ClassicControlPendulumEnv(episode_length=STEPS, reset_pool_size=0, seed=1)
    return Trainer(EnvWrapper(env, num_envs=ENVS, env_backend="cpu"), cfg, verbose=False, results_dir=str(tmp_path / "engine"))


def test_sac_trains_through_lightning_and_resumes_exactly(tmp_path):
    """SAC (issue 25 item 5: no edit to Lightning): three optimizers (actor, critic, temperature),
    the temperature registered as a module parameter, target critics and the replay in the engine
    entry; the Trainer's weights and an exact resume."""
    from warp_drive.config.algorithms import algorithm_names

    if "SAC" not in algorithm_names():
        pytest.skip("SAC is not registered yet (warp_drive/training/algorithms/sac/)")
    plain = _sac_engine(tmp_path / "plain")
    plain.train(3)
    every = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = WarpDriveModule(_sac_engine(tmp_path / "a"), iterations_per_epoch=1)
    assert full.num_optimizers == 3 and list(full.state_dict())[-1] == "policy_parameters.shared.0"
    _fit(full, tmp_path / "a", max_epochs=3, checkpoint=every)
    _assert_same(_all_state(plain), _all_state(full.engine))
    resumed = WarpDriveModule(_sac_engine(tmp_path / "b"), iterations_per_epoch=1)
    _fit(resumed, tmp_path / "b", max_epochs=3, ckpt_path=str(tmp_path / "ckpt" / "epoch=1.ckpt"), checkpoint=False)
    _assert_same(_all_state(full.engine), _all_state(resumed.engine))


def _mappo_engine(tmp_path) -> Trainer:
    """MAPPO with the env's `state` as the critic input (issue 38), on simple_spread; every reset restores the
    host layout, so Lightning's forced reset at the start of a fit is the reset the rollout did last."""
    from example_envs.mpe.simple_spread.simple_spread import MpeSimpleSpreadEnv

    cfg = {"name": "mpe_simple_spread", "env": {"episode_length": STEPS},
           "trainer": {"num_envs": ENVS, "train_batch_size": ENVS * STEPS, "num_episodes": 4 * ENVS, "env_backend": "cpu",
                       "seed": 1},
           "policy": {"shared": {"to_train": True, "algorithm": "MAPPO", "critic_input": "global_state",
                                 "actor_input": "obs_agent_id", "num_minibatches": 2, "model": {"fc_dims": [16]}}},
           "saving": {"metrics_log_freq": 10**6, "model_params_save_freq": 10**6, "basedir": str(tmp_path)}}
    env = MpeSimpleSpreadEnv(episode_length=STEPS, fresh_start_states=False, seed=1)
    return Trainer(EnvWrapper(env, num_envs=ENVS, env_backend="cpu"), cfg, verbose=False, results_dir=str(tmp_path / "engine"))


def test_mappo_trains_through_lightning_and_resumes_exactly(tmp_path):
    """A separate critic on the env's state: Lightning trains the Trainer's weights (and value normalizer), and a
    Lightning checkpoint resumes exactly."""
    plain = _mappo_engine(tmp_path / "plain")
    plain.train(3)
    every = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_top_k=-1, every_n_epochs=1, filename="{epoch}")
    full = WarpDriveModule(_mappo_engine(tmp_path / "a"), iterations_per_epoch=1)
    assert type(full.engine.policies["shared"].model).__name__ == "FullyConnectedSeparateCritic"
    _fit(full, tmp_path / "a", max_epochs=3, checkpoint=every)
    _assert_same(_all_state(plain), _all_state(full.engine))
    resumed = WarpDriveModule(_mappo_engine(tmp_path / "b"), iterations_per_epoch=1)
    _fit(resumed, tmp_path / "b", max_epochs=3, ckpt_path=str(tmp_path / "ckpt" / "epoch=1.ckpt"), checkpoint=False)
    _assert_same(_all_state(full.engine), _all_state(resumed.engine))
