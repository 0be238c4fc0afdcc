"""Non-finite values stop training within one iteration, before they reach a checkpoint.

A tiny env writes a NaN (or an infinity) into its rewards or observations at a chosen env step;
the run stops at the end of that iteration with a NonFiniteError naming the array, the env, the
agent and the value, and the newest checkpoint stays the previous, finite one. A run whose values
stay finite trains bit-identically with and without the check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import NonFiniteError
from warp_drive.managers.cpu_kernels import ERROR_BAD_VALUE
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training.run import trainer as trainer_module
from warp_drive.training.run.finite_checks import check_iteration
from warp_drive.training.trainer import Trainer
from warp_drive.utils.constants import Constants

PMAP = {"a": [3, 1], "b": [0, 2]}
STEPS = 8  # env steps per iteration


class PoisonedLine(ToyLine):
    """ToyLine that writes ``value`` into ``array`` of (env, agent) at its ``at_step``-th step (counted from 1)."""

    def __init__(self, array: str = Constants.REWARDS, at_step: int = 0, env: int = 2, agent: int = 1,
                 value: float = math.nan, **kw) -> None:
        super().__init__(**kw)
        self.poison = (array, at_step, env, agent, value)
        self.steps = 0

    def numpy_step(self, data: dict) -> None:
        super().numpy_step(data)
        self.steps += 1
        array, at_step, env, agent, value = self.poison
        if self.steps == at_step:
            data[array][env, agent, ...] = value


def _trainer(tmp_path, iters=5, **poison) -> Trainer:
    pol = {"to_train": True, "algorithm": "PPO", "lr": 0.01, "gamma": 0.9, "num_minibatches": 2, "num_epochs": 1,
           "model": {"fc_dims": [8]}}
    cfg = {"name": "toy", "env": {"num_agents": 4, "episode_length": 20, "goal": 6.0},
           "trainer": {"num_envs": 4, "train_batch_size": 4 * STEPS, "num_episodes": -(-4 * STEPS * iters // 20),
                       "env_backend": "cpu", "seed": 5},
           "policy": {"a": dict(pol), "b": dict(pol, algorithm="A2C")},
           "saving": {"metrics_log_freq": 1, "model_params_save_freq": 1, "basedir": str(tmp_path),
                      "checkpoint_every_seconds": 0}}
    env = PoisonedLine(num_agents=4, episode_length=20, goal=6.0, **poison)
    return Trainer(EnvWrapper(env, num_envs=4, env_backend="cpu"), cfg, PMAP, verbose=False,
                   results_dir=str(tmp_path / "run"))


def _assert_clean_checkpoint_at(t: Trainer, iteration: int) -> None:
    """The newest checkpoint is the one of ``iteration``, and every weight in it is finite."""
    path, state = ckpt.resolve_checkpoint(t.save_dir)
    assert state["iteration"] == iteration
    assert not (ckpt.Path(t.save_dir) / f"checkpoint_{iteration + 1:08d}.pt").exists()
    weights = [v for p in state["policies"].values() for v in p["model"].values() if torch.is_tensor(v)]
    assert weights and all(torch.isfinite(w).all() for w in weights if w.is_floating_point())


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_nan_reward_stops_within_the_iteration(tmp_path, value):
    t = _trainer(tmp_path, at_step=2 * STEPS + 3, value=value)  # the 3rd step of iteration 3
    with pytest.raises(NonFiniteError) as info:
        t.train()
    err = info.value
    assert (err.iteration, err.array, err.env, err.agent) == (3, "rewards", 2, 1)
    assert str(err.value) == str(value)
    msg = str(err)
    assert f"the rewards hold {value} at rollout step 2, env 2, agent 1" in msg
    assert "iteration 3, before its checkpoint" in msg and "the env produced it" in msg
    _assert_clean_checkpoint_at(t, 2)


def test_nan_observation_names_policy_env_agent(tmp_path):
    # agent 3 is the first agent of policy 'a': the message gives the env's agent index, not the policy's row
    t = _trainer(tmp_path, array=Constants.OBSERVATIONS, at_step=STEPS + 1, env=1, agent=3)
    with pytest.raises(NonFiniteError) as info:
        t.train()
    err = info.value
    assert (err.iteration, err.env, err.agent) == (2, 1, 3)
    assert err.array == "observations (policy 'a')"
    assert "env 1, agent 3, feature [0]" in str(err)
    _assert_clean_checkpoint_at(t, 1)


def test_nonfinite_weight_and_sampler_flag_are_named(tmp_path):
    t = _trainer(tmp_path, iters=2)
    t.train(1)
    metrics = t.update_policies(t.collect())
    check_iteration(t.iteration, (t.policies, t.rollout.shared.rewards, t.sampler, metrics))  # finite: no error
    with torch.no_grad():
        next(t.policies["b"].model.parameters()).view(-1)[0] = -math.inf
    with pytest.raises(NonFiniteError, match=r"the weight '[\w.]+' \(policy 'b'\) holds -inf at index \[0"):
        check_iteration(t.iteration, (t.policies, t.rollout.shared.rewards, t.sampler, metrics))
    with torch.no_grad():
        next(t.policies["b"].model.parameters()).view(-1)[0] = 0.0
    t.sampler.error_flag.fill_(ERROR_BAD_VALUE)
    with pytest.raises(NonFiniteError, match="the sampler received NaN or negative values") as info:
        check_iteration(t.iteration, (t.policies, t.rollout.shared.rewards, t.sampler, metrics))
    assert info.value.array == "the sampler's error flag"
    assert int(t.sampler.error_flag) == 0  # reported once


def test_finite_run_is_bit_identical_without_the_check(tmp_path, monkeypatch):
    def weights(t):
        return {f"{tag}/{k}": v.clone() for tag, p in t.policies.items() for k, v in p.model.state_dict().items()}

    checked = _trainer(tmp_path / "checked", iters=3)
    checked.train()
    monkeypatch.setattr(trainer_module, "check_iteration", lambda *a: None)
    unchecked = _trainer(tmp_path / "unchecked", iters=3)
    unchecked.train()
    a, b = weights(checked), weights(unchecked)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert np.isfinite([float(v.float().sum()) for v in a.values()]).all()
