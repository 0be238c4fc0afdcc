"""The rollout's reset-first step order gives the bootstrap order's results, bit for bit.

Without bootstrapping at time limits (``trainer.bootstrap_at_time_limit: false``, the Tag tutorial
config) a rollout step resets the done envs before its one policy forward, which then runs on the
observations after the reset (:mod:`warp_drive.training.engine.rollout`). The bootstrap order forwards on
the observations before the reset and takes the saved reset observations' outputs for the done
envs (or forwards a second time when the env has no saved reset observations). Same config and
seed, one trainer per order (and one whose rollout runs in env parts, the cpu pipeline): every
rollout buffer, the recorded done flags, rewards and actions, the env state, the sampler and
reset-pool counters and the trained weights must be equal after rollouts in which episodes end.
Evaluation (always reset first now) must give what the bootstrap order's step gave.

8 envs (2 parts of 4) and agents per policy chosen so that every policy forward has a multiple of
4 rows (see ``test_cpu_pipeline.py`` on MKL's float32 GEMM).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from example_envs.mpe.simple_spread.simple_spread import MpeSimpleSpreadEnv
from example_envs.tag_continuous.tag_continuous import TagContinuous
from tests.cpu.training.test_cpu_pipeline import DriftLine, PooledLine, _policy, _separable
from tests.helpers.corridor_env import Corridor
from tests.helpers.threads import torch_threads
from tests.helpers.toy_env import ToyLine
from tests.helpers.training_state import same_to_float_rounding, trainer_state
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import UsageError
from warp_drive.training.engine import cpu_pipeline
from warp_drive.training.trainer import Trainer
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed


class PooledObsLine(ToyLine):
    """The toy line whose observations restart from a reset pool: no saved reset observations, so
    the bootstrap order runs a second forward per step."""

    def get_tensor_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data(Constants.OBSERVATIONS, (self.x0() / np.float32(self.length))[:, None])
        return feed

    def get_reset_pool_dictionary(self) -> DataFeed:
        feed = DataFeed()
        pool = (np.arange(5 * self.num_agents, dtype=np.float32).reshape(5, -1, 1) % 7) / np.float32(7)
        feed.add_pool_for_reset("obs_pool", pool, reset_target=Constants.OBSERVATIONS)
        return feed


ENVS = {
    "tag": (TagContinuous, dict(num_taggers=2, num_runners=6, grid_length=2.0, episode_length=9, seed=3,
                                use_full_observation=False, num_other_agents_observed=4, tagging_distance=0.15),
            {"tagger": _policy(), "runner": _policy(algorithm="PPO")}),
    # fresh start states: a reset draws new observations, so the bootstrap order runs a second forward
    "tag_fresh": (TagContinuous, dict(num_taggers=2, num_runners=6, grid_length=2.0, episode_length=9, seed=3,
                                      use_full_observation=False, num_other_agents_observed=4, tagging_distance=0.15,
                                      fresh_start_states=True),
                  {"tagger": _policy(), "runner": _policy(algorithm="PPO")}),
    "pool": (PooledLine, dict(num_agents=5, episode_length=4), {"a": _policy(), "b": _policy(to_train=False)}),
    "pool_obs": (PooledObsLine, dict(num_agents=6, episode_length=5), {"a": _policy(), "b": _policy(algorithm="PPO")}),
    "gaussian": (DriftLine, dict(num_agents=4, episode_length=5), {"a": _policy(), "b": _policy()}),
    "one_policy": (ToyLine, dict(num_agents=4, episode_length=4), {"shared": _policy(algorithm="PPO")}),
    # what a network sees (issue 38): inputs composed from the reset copies (`state`, all agents' obs) in the
    # bootstrap order, from the live arrays after the reset in the reset-first order
    "network_inputs": (MpeSimpleSpreadEnv, dict(num_agents=4, episode_length=4, seed=3, fresh_start_states=False),
                       {"a": _policy(critic_input="global_state"),
                        "b": _policy(algorithm="MAPPO", actor_input="obs_agent_id")}),
    # action masks and active flags (issue 38 item 2): from the reset copies in the bootstrap order, from the live
    # arrays after the reset in the reset-first order
    "agent_masks": (Corridor, dict(num_agents=6, episode_length=5), {"a": _policy(), "b": _policy(algorithm="PPO")}),
}


@pytest.fixture(autouse=True)
def two_threads():
    """Two torch threads, so that the separable envs' rollouts run in 2 env parts."""
    with torch_threads(2):
        yield


def _trainer(tmp_path: Path, name: str, parts: bool = False, bootstrap: bool = False, num_envs: int = 8) -> Trainer:
    env_cls, kwargs, policies = ENVS[name]
    env = _separable(env_cls, parts)(**kwargs)
    config = {"name": name, "trainer": {"num_envs": num_envs, "train_batch_size": num_envs * 6, "num_episodes": 1000,
                                        "env_backend": "cpu", "seed": 11, "bootstrap_at_time_limit": bootstrap},
              "policy": policies,
              "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}
    if name.startswith("tag"):
        policy_map = {"tagger": sorted(env.taggers), "runner": sorted(env.runners)}
    elif name == "one_policy":
        policy_map = {"shared": list(range(env.num_agents))}
    else:
        policy_map = {"a": [0, 2], "b": [i for i in range(env.num_agents) if i not in (0, 2)]}
    t = Trainer(EnvWrapper(env, num_envs=num_envs, env_backend="cpu"), config, policy_map, verbose=False,
                results_dir=str(tmp_path / "run"))
    t.env_wrapper.reset_all_envs()
    return t


def _state(t: Trainer) -> dict[str, torch.Tensor]:
    """All of the trainer's results but the bootstrap values (written only by the bootstrap order,
    read only when bootstrapping)."""
    return trainer_state(t, skip_buffers=("next_values",))


def _count_forwards(t: Trainer) -> dict[str, list[int]]:
    calls = {tag: [0] for tag in t.policies}
    for tag, p in t.policies.items():
        p.model.register_forward_hook(lambda *_, c=calls[tag]: c.__setitem__(0, c[0] + 1))
    return calls


def _train(t: Trainer, iterations: int = 3) -> list[dict[str, torch.Tensor]]:
    lasts = []
    for _ in range(iterations):  # episodes end inside rollouts and across them
        last = t.generate_rollout()
        lasts.append({k: v.clone() for k, v in last.items()})
        t.update(last)
    return lasts


def _assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], float_rounding: bool = False) -> None:
    """Equal bit for bit; with ``float_rounding``, as :func:`same_to_float_rounding` says."""
    assert a.keys() == b.keys()
    same = same_to_float_rounding if float_rounding else torch.equal
    differ = [k for k in a if not same(a[k], b[k])]
    assert not differ


@pytest.mark.parametrize("name", sorted(ENVS))
def test_reset_first_order_equals_the_bootstrap_order_bit_for_bit(tmp_path, name):
    first, boot = _trainer(tmp_path / "first", name), _trainer(tmp_path / "boot", name)
    assert first.rollout.reset_first and boot.rollout.reset_first  # the default without bootstrapping
    boot.rollout.reset_first = False
    calls = {"first": _count_forwards(first), "boot": _count_forwards(boot)}
    lasts_first, lasts_boot = _train(first), _train(boot)
    for a, b in zip(lasts_first, lasts_boot):
        _assert_same(a, b)
    _assert_same(_state(first), _state(boot))
    B = first.steps_per_iter
    boot_forwards = B + 2 if boot.reset_obs_known else 2 * B + 1
    assert boot.reset_obs_known == (name not in ("pool_obs", "tag_fresh"))
    for tag in first.policies:  # 3 rollouts, plus one forward per minibatch and epoch in the updates
        updates = 3 * first.policies[tag].config.num_epochs * first.policies[tag].config.num_minibatches
        trained = updates if first.policies[tag].to_train else 0
        assert calls["first"][tag][0] == 3 * (B + 1) + trained
        assert calls["boot"][tag][0] == 3 * boot_forwards + trained
        assert not first.policies[tag].buffers.next_values.any()  # never written reset first
    assert first.rollout.shared.timestep is None and first.rollout.shared.truncated is None
    assert (first.rollout.shared.actions is None) == (name == "one_policy")
    done = first.rollout.shared.done
    assert done.any() and (done == 0).any()  # the rollouts did reset envs


@pytest.mark.parametrize("name", ["tag", "pool_obs", "gaussian", "network_inputs"])
def test_reset_first_rollout_in_env_parts_equals_the_plain_loop(tmp_path, monkeypatch, name):
    parts, plain = _trainer(tmp_path / "parts", name, parts=True), _trainer(tmp_path / "plain", name)
    seen = []
    run = cpu_pipeline.EnvPartsRollout.run
    monkeypatch.setattr(cpu_pipeline.EnvPartsRollout, "run",
                        lambda self, timer=None: seen.append(len(self.parts)) or run(self, timer))
    for a, b in zip(_train(parts), _train(plain)):
        _assert_same(a, b, float_rounding=True)
    assert seen == [2, 2, 2]
    _assert_same(_state(parts), _state(plain), float_rounding=True)
    assert plain.rollout.shared.done.any()


def test_reset_first_with_bootstrapping_is_refused(tmp_path):
    t = _trainer(tmp_path, "pool", bootstrap=True)
    assert not t.rollout.reset_first
    assert t.rollout.shared.timestep is not None  # read to split time limits from other ends
    with pytest.raises(UsageError, match="bootstrap_at_time_limit=false"):
        t.rollout.reset_first = True
    t.rollout.reset_first = False  # the bootstrap order stays allowed


def _bootstrap_order_step(rollout):
    """Rollout.end_step as the bootstrap order ran it in evaluation (forward, then reset and select)."""
    def end_step(step, mark=None):
        done, next_out = rollout.after_step(step)
        rollout.spec.env_wrapper.reset_only_done_envs()
        rollout.set_next_outputs(done, next_out)
    return end_step


@pytest.mark.parametrize("name", ["tag", "pool_obs"])
def test_evaluation_steps_reset_first_with_the_same_results(tmp_path, name):
    """Evaluation records nothing and steps reset first, whatever the training order."""
    new, old = _trainer(tmp_path / "new", name, bootstrap=True), _trainer(tmp_path / "old", name, bootstrap=True)
    old.rollout.end_step = _bootstrap_order_step(old.rollout)
    out = {}
    for key, t in (("new", new), ("old", old)):
        calls = _count_forwards(t)
        # the saved start state: the bootstrap order's reset heads are computed from it once per rollout
        returns = t.evaluate(deterministic=False, num_episodes=2, fresh_starts=False)
        per_agent = t.evaluate_episodes(use_argmax=False)
        states = t.fetch_episode_states(list(t.env_wrapper.cuda_data_manager.reset_data_list[:1]), env_id=3,
                                        include_rewards_actions=True, include_probabilities=True)
        out[key] = (returns, per_agent, states, {tag: c[0] for tag, c in calls.items()})
    (ret_new, per_new, st_new, calls_new), (ret_old, per_old, st_old, calls_old) = out["new"], out["old"]
    for tag in ret_new:
        for k in ret_new[tag]:
            np.testing.assert_array_equal(ret_new[tag][k], ret_old[tag][k])
        assert len(ret_new[tag]["episode_return"]) == 2 * 8  # every env finished 2 episodes
    for a, b in zip(per_new, per_old):
        for tag in a:
            np.testing.assert_array_equal(a[tag], b[tag])
    states_new, actions_new, rewards_new, probs_new = st_new
    states_old, actions_old, rewards_old, probs_old = st_old
    for k in states_new:
        np.testing.assert_array_equal(states_new[k], states_old[k])
    np.testing.assert_array_equal(actions_new, actions_old)
    np.testing.assert_array_equal(rewards_new, rewards_old)
    assert probs_new.keys() == probs_old.keys()
    for step in probs_new:
        for tag in probs_new[step]:
            for x, y in zip(probs_new[step][tag], probs_old[step][tag]):
                np.testing.assert_array_equal(x, y)
    if name == "pool_obs":  # no saved reset observations: the bootstrap order forwarded twice a step
        assert all(calls_old[tag] > calls_new[tag] for tag in calls_new)


def test_cpu_floor_bench_counts_the_reset_first_forwards(tmp_path):
    """benchmarks/bench_cpu_floor.py counts one forward per step (and one at the start) reset first."""
    spec = importlib.util.spec_from_file_location(
        "bench_cpu_floor", Path(__file__).resolve().parents[3] / "benchmarks" / "bench_cpu_floor.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for name in ("pool", "pool_obs"):
        t = _trainer(tmp_path / name, name)
        counted = bench.policy_flops(t)
        with FlopCounterMode(display=False) as fc:
            t.update(t.generate_rollout())
        assert fc.get_total_flops() == counted["total_flops"]


def test_turning_fresh_starts_on_after_building_is_refused_in_the_bootstrap_order(tmp_path):
    t = _trainer(tmp_path, "tag", bootstrap=True)
    assert t.reset_obs_known and not t.rollout.reset_first
    t.env_wrapper.fresh_start_states = True
    with pytest.raises(UsageError, match="fresh_start_states was turned on after the trainer was built"):
        t.generate_rollout()
