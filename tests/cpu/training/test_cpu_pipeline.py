"""cpu backend: the rollout in env parts (one thread each) gives the plain loop's results.

Two trainers with the same config and seed, one whose env opts in to the parts
(``numpy_step_is_env_separable``) and one whose env does not (the plain loop), run the same
iterations; every rollout buffer, the env state on the data store, the sampler and reset-pool
counters and the trained weights must be equal. Envs: Tag continuous (tags, runners leaving the
game, episode ends), a toy line with a reset pool (pool draws), and the toy line with Gaussian
actions.

8 envs (2 parts of 4): every policy forward has a multiple of 4 rows, in the parts and in the
plain loop. MKL's float32 GEMM gives a row the same bits whatever the number of rows in the call
only for such calls (calls of 1 to 3 rows, or a value head's odd row counts, round differently);
at the tutorial config every forward has 500 rows or more. That holds bit for bit where MKL's GEMM
gives a row the same bits whatever the threads of the call (seen on AVX2 machines); on AVX-512 the
plain loop's two-thread GEMM rounds some rows 1 ulp apart from a part's one-thread GEMM (measured:
at most 3e-8 in the Gaussian toy's actions), so floating tensors are compared to float32 rounding
and everything else (counters, flags, sampled categories) exactly.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from gymnasium import spaces

from example_envs.mpe.simple_spread.simple_spread import MpeSimpleSpreadEnv
from example_envs.tag_continuous.tag_continuous import TagContinuous
from tests.helpers.corridor_env import Corridor
from tests.helpers.threads import torch_threads
from tests.helpers.toy_env import ToyLine
from tests.helpers.training_state import same_to_float_rounding, trainer_state
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import SamplerError
from warp_drive.training.engine import cpu_pipeline
from warp_drive.training.engine.cpu_pipeline import SEPARABLE, why_not_parts
from warp_drive.training.trainer import Trainer
from warp_drive.utils.constants import Constants
from warp_drive.utils.data_feed import DataFeed
from warp_drive.utils.philox import philox_words, uniform_from_bits


@pytest.fixture(autouse=True)
def two_threads():
    """The parts need >= 2 torch threads (CI has 2 cores; more threads only mean more parts)."""
    with torch_threads(2):
        yield


class PooledLine(ToyLine):
    """The toy line whose positions restart from a pool row (reset-pool draws) instead of a copy."""

    def get_data_dictionary(self) -> DataFeed:
        feed = DataFeed()
        feed.add_data("x", self.x0())
        feed.add_data("at_goal", np.int32(0), save_copy_and_apply_at_reset=True)
        feed.add_data("goal", self.goal)
        return feed

    def get_reset_pool_dictionary(self) -> DataFeed:
        feed = DataFeed()
        pool = np.arange(7 * self.num_agents, dtype=np.float32).reshape(7, -1) % np.float32(self.length)
        feed.add_pool_for_reset("x_pool", pool, reset_target="x")
        return feed


class DriftLine(ToyLine):
    """The toy line with one continuous action per agent (Gaussian policies): x += action."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.action_space = {a: spaces.Box(-1.0, 1.0, (1,), np.float32) for a in range(self.num_agents)}

    def numpy_step(self, data: dict) -> None:
        x = data["x"]
        x[:] = np.clip(x + data[Constants.ACTIONS][..., 0], 0.0, np.float32(self.length))
        data[Constants.OBSERVATIONS][..., 0] = x / np.float32(self.length)
        data[Constants.REWARDS][:] = -np.abs(x - np.float32(data["goal"]))
        data[Constants.TIMESTEP][:] += 1
        data[Constants.DONE][data[Constants.TIMESTEP] >= data["episode_length"]] = 1


class WindyLine(ToyLine):
    """The toy line blown by a Philox gust keyed by (agent, timestep, episode index): the parts read the
    episode index (``Constants.EPISODE``) of their own envs, and the resets advance it. (Not the env index:
    a part's views start at its first env, so a separable step cannot key draws by env.)"""

    step_kernel_args = (*ToyLine.step_kernel_args, Constants.EPISODE)

    def numpy_step(self, data: dict) -> None:
        super().numpy_step(data)
        words = philox_words(5, 0x77696E64, np.arange(self.num_agents), data[Constants.TIMESTEP][:, None],
                             data[Constants.EPISODE][:, None])
        data["x"][:] = np.clip(data["x"] + uniform_from_bits(words[..., 0]), 0.0, np.float32(self.length))


def _separable(env_cls: type, flag: bool) -> type:
    return type(f"{env_cls.__name__}{'Parts' if flag else 'Plain'}", (env_cls,), {SEPARABLE: flag})


def _policy(**overrides):
    return {"to_train": True, "algorithm": "A2C", "lr": 0.01, "entropy_coeff": 0.05, "model": {"fc_dims": [16, 16]},
            **overrides}


ENVS = {
    "tag": (TagContinuous, dict(num_taggers=2, num_runners=6, grid_length=2.0, episode_length=9, seed=3,
                                use_full_observation=False, num_other_agents_observed=4, tagging_distance=0.15),
            {"tagger": _policy(), "runner": _policy(algorithm="PPO")}),
    "pool": (PooledLine, dict(num_agents=5, episode_length=4), {"a": _policy(), "b": _policy(to_train=False)}),
    "gaussian": (DriftLine, dict(num_agents=4, episode_length=5), {"a": _policy(), "b": _policy()}),
    "episode index": (WindyLine, dict(num_agents=5, episode_length=4), {"a": _policy(), "b": _policy()}),
    # what a network sees (issue 38): the env's `state` (sliced per part), every agent's obs, agent IDs
    "network inputs": (MpeSimpleSpreadEnv, dict(num_agents=4, episode_length=4, seed=3),
                       {"a": _policy(critic_input="global_state"),
                        "b": _policy(algorithm="MAPPO", actor_input="obs_agent_id")}),
    # action masks and agents leaving the game (issue 38 item 2): the env's `action_mask` and `active`, per part
    "agent masks": (Corridor, dict(num_agents=6, episode_length=5), {"a": _policy(), "b": _policy(algorithm="PPO")}),
}


def _trainer(tmp_path, name: str, parts: bool, num_envs: int = 8) -> Trainer:
    env_cls, kwargs, policies = ENVS[name]
    env = _separable(env_cls, parts)(**kwargs)
    config = {"name": name, "trainer": {"num_envs": num_envs, "train_batch_size": num_envs * 6,
                                        "num_episodes": 1000, "env_backend": "cpu", "seed": 11},
              "policy": policies,
              "saving": {"metrics_log_freq": 1000, "model_params_save_freq": 1000, "basedir": str(tmp_path)}}
    if name == "tag":
        policy_map = {"tagger": sorted(env.taggers), "runner": sorted(env.runners)}
    else:
        policy_map = {"a": [0, 2], "b": [i for i in range(env.num_agents) if i not in (0, 2)]}
    t = Trainer(EnvWrapper(env, num_envs=num_envs, env_backend="cpu"), config, policy_map, verbose=False)
    t.env_wrapper.reset_all_envs()
    return t


@pytest.mark.parametrize("name", sorted(ENVS))
def test_parts_rollout_equals_the_plain_loop(tmp_path, monkeypatch, name):
    parts, plain = _trainer(tmp_path / "parts", name, True), _trainer(tmp_path / "plain", name, False)
    assert why_not_parts(parts.rollout) is None
    assert "does not set numpy_step_is_env_separable" in why_not_parts(plain.rollout)
    seen = []
    run = cpu_pipeline.EnvPartsRollout.run
    monkeypatch.setattr(cpu_pipeline.EnvPartsRollout, "run",
                        lambda self, timer=None: seen.append(len(self.parts)) or run(self, timer))
    for _ in range(3):  # episodes end inside rollouts and across them
        last_parts, last_plain = parts.generate_rollout(), plain.generate_rollout()
        assert last_parts.keys() == last_plain.keys()
        for tag in last_parts:
            assert same_to_float_rounding(last_parts[tag], last_plain[tag]), tag
        parts.update(last_parts)
        plain.update(last_plain)
    assert seen == [2, 2, 2]
    a, b = trainer_state(parts), trainer_state(plain)
    assert a.keys() == b.keys()
    differ = [k for k in a if not same_to_float_rounding(a[k], b[k])]
    assert not differ
    done = plain.rollout.shared.done
    assert done.any() and (done == 0).any()  # the rollouts did reset envs
    if name == "tag":  # runners were tagged (taggers rewarded)
        assert (plain.rollout.shared.rewards[..., sorted(plain.env_wrapper.env.taggers)] > 0).any()


def test_a_timed_rollout_runs_in_parts_and_times_its_phases(tmp_path):
    """Logging iterations pass a phase timer: the parts time the first part's phases, same results."""
    from warp_drive.training.engine.phase_timer import PhaseTimer

    timed, plain = _trainer(tmp_path / "a", "tag", True), _trainer(tmp_path / "b", "tag", False)
    timer = PhaseTimer(torch.device("cpu"))
    timed.generate_rollout(timer)
    plain.generate_rollout()
    assert cpu_pipeline._PIPELINES[timed.rollout][1] is not None  # it ran in parts
    phases = timer.totals()
    assert set(phases) == {"policy", "sampling", "env_step"} and all(v > 0 for v in phases.values())
    a, b = trainer_state(timed), trainer_state(plain)
    assert not [k for k in a if not same_to_float_rounding(a[k], b[k])]


def test_why_not_parts_names_the_reason(tmp_path):
    t = _trainer(tmp_path, "pool", True)
    assert why_not_parts(t.rollout) is None
    torch.set_num_threads(1)
    assert why_not_parts(t.rollout) == "torch runs on one thread"
    assert cpu_pipeline.rollout_in_env_parts(t.rollout) is None  # the caller runs the plain loop
    torch.set_num_threads(2)
    one = _trainer(tmp_path / "one", "pool", True, num_envs=1)
    assert why_not_parts(one.rollout) == "one env replica"
    t.policies["b"].model.noise = torch.nn.Dropout(0.2)  # draws from torch's generator in the forward
    assert why_not_parts(t.rollout) == ("policy 'b' has a Dropout layer 'noise', whose forward changes state "
                                        "(running statistics, random draws)")
    t.policies["b"].model.eval()
    assert why_not_parts(t.rollout) is None


def test_an_error_in_one_part_stops_the_others_and_is_raised(tmp_path):
    t = _trainer(tmp_path, "pool", True)
    step = t.env_wrapper.env.numpy_step
    calls = []

    def failing(data):
        calls.append(data[Constants.DONE].shape[0])
        if len(calls) > 3:
            raise FloatingPointError("boom in a part")
        step(data)

    t.env_wrapper.env.numpy_step = failing
    threads = threading.active_count()
    with pytest.raises(FloatingPointError, match="boom in a part"):
        t.generate_rollout()
    assert threading.active_count() == threads  # the worker was joined
    assert len(calls) < 2 * t.steps_per_iter


def test_bad_probabilities_reach_the_sampler_check(tmp_path):
    t = _trainer(tmp_path, "pool", True)
    with torch.no_grad():
        for param in t.policies["a"].model.parameters():
            param.fill_(float("nan"))
    t.generate_rollout()
    with pytest.raises(SamplerError, match="NaN or negative"):
        t.sampler.check()
