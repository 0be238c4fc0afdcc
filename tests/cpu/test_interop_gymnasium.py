"""WarpDriveVectorEnv on the cpu backend: spaces, shapes, same-step autoreset against Gymnasium's own
SyncVectorEnv, final observations, zero-copy outputs, seeding, flattening and input checks."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from example_envs import get_example_env_class  # importing example_envs registers the envs by name
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, DataShapeError, DataTypeError
from warp_drive.interop import InteropError, WarpDriveVectorEnv
from warp_drive.interop._common import split_done
from warp_drive.utils.constants import Constants

CARTPOLE = dict(episode_length=8, seed=0)


def cartpole(num_envs: int = 4, **kwargs: Any) -> WarpDriveVectorEnv:
    config = kwargs.pop("env_config", CARTPOLE)
    return WarpDriveVectorEnv("cartpole", num_envs=num_envs, env_config=config, **kwargs)


def store(envs: WarpDriveVectorEnv, name: str) -> torch.Tensor:
    return envs.data_manager.data_on_device_via_torch(name)


# ----------------------------------------------------------------------------- spaces and shapes
def test_is_a_gymnasium_vector_env_with_batched_spaces():
    envs = cartpole(5)
    inner = envs.env
    assert isinstance(envs, VectorEnv) and envs.unwrapped is envs
    assert envs.num_envs == 5
    assert envs.single_observation_space == inner.observation_space[0]
    assert envs.single_action_space == gym.spaces.Discrete(2)
    assert envs.observation_space == batch_space(envs.single_observation_space, 5)
    assert envs.action_space == batch_space(envs.single_action_space, 5)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP


def test_shapes_dtypes_and_device():
    envs = cartpole(5)
    obs, infos = envs.reset(seed=0)
    assert infos == {}
    assert obs.shape == (5, 4) and obs.dtype == torch.float32 and obs.device == envs.device
    assert envs.observation_space.contains(obs.numpy())
    obs, rew, term, trunc, infos = envs.step(torch.as_tensor(envs.action_space.sample()))
    assert obs.shape == (5, 4) and obs.dtype == torch.float32
    assert rew.shape == (5,) and rew.dtype == torch.float32
    assert term.shape == trunc.shape == (5,) and term.dtype == trunc.dtype == torch.bool
    assert infos["final_obs"].shape == (5, 4) and infos["_final_obs"].dtype == torch.bool
    assert all(t.device == envs.device for t in (obs, rew, term, trunc, infos["final_obs"]))
    torch.testing.assert_close(rew, torch.ones(5))  # CartPole: +1 per step


def test_box_actions_pendulum():
    envs = WarpDriveVectorEnv("pendulum", num_envs=3, env_config=dict(episode_length=4, seed=1))
    assert envs.action_space == batch_space(gym.spaces.Box(-2.0, 2.0, (1,), np.float32), 3)
    envs.reset(seed=0)
    actions = torch.tensor([[-1.0], [0.5], [2.0]])
    envs.step(actions)
    torch.testing.assert_close(store(envs, Constants.ACTIONS)[:, 0, :], actions)
    envs.step(np.array([0.0, 1.0, -2.0]))  # float64 NumPy, shape (num_envs,): fine
    torch.testing.assert_close(store(envs, Constants.ACTIONS)[:, 0, 0], torch.tensor([0.0, 1.0, -2.0]))


# ----------------------------------------------------------------------------- zero copy
def test_outputs_are_views_of_the_data_store():
    envs = cartpole(4)
    obs, _ = envs.reset(seed=0)
    obs_store, rew_store = store(envs, Constants.OBSERVATIONS), store(envs, Constants.REWARDS)
    assert obs.data_ptr() == obs_store.data_ptr()
    obs2, rew, *_ = envs.step(torch.zeros(4, dtype=torch.long))
    assert obs2.data_ptr() == obs_store.data_ptr() and rew.data_ptr() == rew_store.data_ptr()
    # writes to the store are visible through the returned tensors (and vice versa)
    envs.data_manager.assign(Constants.OBSERVATIONS, torch.full(tuple(obs_store.shape), 7.0))
    assert torch.all(obs2 == 7.0)
    rew[2] = -3.0
    assert rew_store[2, 0] == -3.0


def test_actions_are_written_into_the_store_in_place():
    envs = cartpole(4)
    envs.reset(seed=0)
    act_store = store(envs, Constants.ACTIONS)
    ptr = act_store.data_ptr()
    envs.step(torch.tensor([1, 0, 1, 1]))
    assert act_store.data_ptr() == ptr
    assert act_store[:, 0, 0].tolist() == [1, 0, 1, 1]


def test_copy_true_returns_device_copies():
    envs = cartpole(4, copy=True)
    obs, _ = envs.reset(seed=0)
    assert obs.data_ptr() != store(envs, Constants.OBSERVATIONS).data_ptr()
    obs, rew, *_ = envs.step(torch.zeros(4, dtype=torch.long))
    torch.testing.assert_close(obs, store(envs, Constants.OBSERVATIONS)[:, 0])
    assert rew.data_ptr() != store(envs, Constants.REWARDS).data_ptr()


# ----------------------------------------------------------------------------- autoreset
def test_split_done_rule():
    done = torch.tensor([0, 1, 1, 2, 2, 0], dtype=torch.int32)
    t = torch.tensor([3, 3, 10, 4, 10, 10], dtype=torch.int32)
    term, trunc = split_done(done, t, episode_length=10)
    assert term.tolist() == [False, True, False, True, True, False]
    assert trunc.tolist() == [False, False, True, False, False, False]


def test_same_step_autoreset_at_the_time_limit():
    envs = cartpole(4)
    first, _ = envs.reset(seed=5)
    first = first.clone()
    actions = torch.tensor([0, 1, 0, 1])
    for t in range(1, 9):
        obs, rew, term, trunc, infos = envs.step(actions if t % 2 else 1 - actions)
        if t < 8:
            assert not (term | trunc).any() and not infos["_final_obs"].any()
            torch.testing.assert_close(infos["final_obs"], obs)  # rows that did not end: current obs
        before_reset = infos["final_obs"].clone()
    # t = 8 = episode_length: every env truncated, reset in the same step
    assert trunc.all() and not term.any()
    assert infos["_final_obs"].all() and infos["_final_info"].all() and infos["final_info"] == {}
    torch.testing.assert_close(obs, first)  # the reset obs: each env's saved initial state
    assert not torch.equal(before_reset, first)
    assert infos["final_obs"].data_ptr() != obs.data_ptr()  # a copy, not the live store
    torch.testing.assert_close(rew, torch.ones(4))  # the final transition's reward
    assert store(envs, Constants.TIMESTEP).tolist() == [0, 0, 0, 0]
    assert store(envs, Constants.DONE).tolist() == [0, 0, 0, 0]


def test_termination_before_the_time_limit():
    envs = cartpole(3, env_config=dict(episode_length=200, seed=0))
    envs.reset(seed=1)
    for _ in range(200):  # always push right: the pole falls within a few dozen steps
        obs, _, term, trunc, infos = envs.step(torch.ones(3, dtype=torch.long))
        if term.any():
            break
    assert term.any() and not trunc.any()
    assert torch.equal(infos["_final_obs"], term)
    final = infos["final_obs"][term]
    theta_limit = envs.env.params["theta_threshold_radians"]
    x_limit = envs.env.params["x_threshold"]
    assert torch.all((final[:, 2].abs() > theta_limit) | (final[:, 0].abs() > x_limit))
    assert torch.all(obs[term, 2].abs() < theta_limit)  # their reset obs
    assert store(envs, Constants.TIMESTEP)[term].eq(0).all()


def test_matches_gymnasium_sync_vector_env_same_step_until_the_first_reset():
    """Gymnasium's own SAME_STEP SyncVectorEnv on CartPole-v1 vs the adapter (same seeds, same actions)."""
    E, T = 6, 12
    ref = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=T) for _ in range(E)],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    envs = cartpole(E, env_config=dict(episode_length=T, seed=0))
    ref_obs, _ = ref.reset(seed=40)
    obs, _ = envs.reset(seed=40)
    np.testing.assert_array_equal(obs.numpy(), ref_obs)  # seed + i per sub-env, as Gymnasium does
    rng = np.random.default_rng(0)
    comparable = np.ones(E, bool)
    saw_end = False
    for _ in range(2 * T):
        actions = rng.integers(0, 2, E)
        ref_obs, ref_rew, ref_term, ref_trunc, ref_infos = ref.step(actions)
        obs, rew, term, trunc, infos = envs.step(actions)
        c = comparable
        np.testing.assert_allclose(rew.numpy()[c], ref_rew[c])
        np.testing.assert_array_equal(term.numpy()[c], ref_term[c])
        np.testing.assert_array_equal(trunc.numpy()[c], ref_trunc[c])
        ended = (ref_term | ref_trunc) & c
        np.testing.assert_array_equal(infos["_final_obs"].numpy()[c], ended[c])
        for i in np.flatnonzero(ended):
            saw_end = True
            np.testing.assert_allclose(infos["final_obs"][i].numpy(), ref_infos["final_obs"][i], atol=1e-5)
        np.testing.assert_allclose(obs.numpy()[c & ~ended], ref_obs[c & ~ended], atol=1e-5)
        comparable &= ~ended  # after a reset the start states differ (saved start vs new draw)
    assert saw_end


class _TorchToNumpy(VectorWrapper):
    """Test helper: host copies of the adapter's tensors, for NumPy-only Gymnasium wrappers."""

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return obs.cpu().numpy(), info

    def step(self, actions):
        obs, rew, term, trunc, info = self.env.step(torch.as_tensor(actions))
        return obs.cpu().numpy(), rew.cpu().numpy().astype(np.float64), term.cpu().numpy(), trunc.cpu().numpy(), info


def _check_episode_statistics(wrapped, steps: int) -> tuple[list[float], list[int]]:
    """Steps ``wrapped`` (RecordEpisodeStatistics over 4 CartPoles) with random actions and checks
    every finished episode's reported return and length; returns them."""
    wrapped.reset(seed=0)
    ours = np.zeros(4)
    lengths = np.zeros(4, int)
    returns_done, lengths_done = [], []
    rng = np.random.default_rng(1)
    for _ in range(steps):
        _, rew, term, trunc, infos = wrapped.step(rng.integers(0, 2, 4))
        ours += rew
        lengths += 1
        done = term | trunc
        if done.any():
            np.testing.assert_array_equal(infos["_episode"], done)
            np.testing.assert_allclose(infos["episode"]["r"][done], ours[done])
            np.testing.assert_array_equal(infos["episode"]["l"][done], lengths[done])
            returns_done += list(ours[done])
            lengths_done += list(lengths[done])
        ours[done] = 0
        lengths[done] = 0
    return returns_done, lengths_done


def test_gymnasium_record_episode_statistics_reads_same_step_correctly():
    envs = cartpole(4, env_config=dict(episode_length=30, seed=0))
    wrapped = RecordEpisodeStatistics(_TorchToNumpy(envs))
    expected_returns, expected_lengths = _check_episode_statistics(wrapped, 100)
    assert wrapped.episode_count == len(expected_returns) > 0
    assert list(wrapped.length_queue) == expected_lengths[-len(wrapped.length_queue):]


# ----------------------------------------------------------------------------- resets and seeding
def test_reset_seed_reproducibility():
    a, b = cartpole(4), cartpole(4)
    oa, _ = a.reset(seed=7)
    ob, _ = b.reset(seed=7)
    torch.testing.assert_close(oa, ob)
    ob = ob.clone()  # the returned tensor is a live view of b's store
    assert a.np_random_seed == 7
    for t in range(20):
        act = torch.tensor([t % 2, 1, 0, (t // 3) % 2])
        ra, rb = a.step(act), b.step(act)
        for x, y in zip(ra[:4], rb[:4]):
            torch.testing.assert_close(x, y)
        torch.testing.assert_close(ra[4]["final_obs"], rb[4]["final_obs"])
    first = a.reset(seed=7)[0].clone()
    torch.testing.assert_close(first, ob)  # same seed, same starts (on the same env again)
    other = a.reset(seed=8)[0].clone()
    assert not torch.equal(first, other)
    assert not torch.equal(a.reset()[0], other)  # no seed: next draws of the stream
    # the replicas start from different states (seed + e each)
    assert len({tuple(r) for r in first.tolist()}) == 4


def test_reset_seed_equals_gymnasium_initial_states():
    envs = cartpole(3)
    obs, _ = envs.reset(seed=[3, None, 9])
    np.testing.assert_array_equal(obs[0].numpy(), gym.make("CartPole-v1").reset(seed=3)[0])
    np.testing.assert_array_equal(obs[2].numpy(), gym.make("CartPole-v1").reset(seed=9)[0])
    with pytest.raises(ConfigError, match="one per env replica"):
        envs.reset(seed=[1, 2])
    with pytest.raises(ConfigError, match="non-negative"):
        envs.reset(seed=-1)


def test_reset_seed_reproducible_with_a_reset_pool():
    envs = cartpole(6, env_config=dict(episode_length=5, seed=0, reset_pool_size=16))
    first = envs.reset(seed=3)[0].clone()
    for _ in range(12):
        envs.step(torch.zeros(6, dtype=torch.long))
    torch.testing.assert_close(envs.reset(seed=3)[0], first)
    pool = envs.data_manager.pull_data_from_device(f"{Constants.OBSERVATIONS}_reset_pool")[:, 0]
    for row in first.numpy():  # every start is a pool row
        assert np.any(np.all(pool == row, axis=1))


def test_redraw_false_and_autoresets_restore_the_saved_starts():
    envs = cartpole(3, redraw_start_states=False)
    first = envs.reset(seed=2)[0].clone()
    for _ in range(3):
        envs.step(torch.ones(3, dtype=torch.long))
    torch.testing.assert_close(envs.reset()[0], first)


def test_reset_mask_resets_only_the_selected_envs():
    envs = cartpole(3)
    start = envs.reset(seed=0)[0].clone()
    for _ in range(3):
        obs, *_ = envs.step(torch.ones(3, dtype=torch.long))
    moved = obs.clone()
    obs, _ = envs.reset(options={"reset_mask": np.array([False, True, False])})
    torch.testing.assert_close(obs[[0, 2]], moved[[0, 2]])
    assert store(envs, Constants.TIMESTEP).tolist() == [3, 0, 3]
    assert not torch.equal(obs[1], moved[1])
    obs, _ = envs.reset(seed=0, options={"reset_mask": torch.tensor([True, False, False])})
    torch.testing.assert_close(obs[0], start[0])
    with pytest.raises(ConfigError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.array([1, 0, 0])})
    with pytest.raises(ConfigError, match="no sub-env"):
        envs.reset(options={"reset_mask": np.zeros(3, bool)})


# ----------------------------------------------------------------------------- multi-agent
@pytest.mark.parametrize("name", ["tag_gridworld", "tag_continuous"])
def test_multi_agent_envs_are_refused(name):
    with pytest.raises(ConfigError, match="flatten_agents=True"):
        WarpDriveVectorEnv(name, num_envs=2, env_config=dict(num_taggers=2, episode_length=5))


def test_flatten_agents():
    E, N = 3, 4
    envs = WarpDriveVectorEnv(
        "tag_gridworld", num_envs=E, env_config=dict(num_taggers=N - 1, grid_length=4, episode_length=3),
        flatten_agents=True,
    )
    assert envs.num_envs == E * N and envs.num_replicas == E
    assert envs.action_space == batch_space(gym.spaces.Discrete(5), E * N)
    obs, _ = envs.reset(seed=0)
    obs_store = store(envs, Constants.OBSERVATIONS)
    assert obs.shape == (E * N, obs_store.shape[-1]) and obs.data_ptr() == obs_store.data_ptr()
    torch.testing.assert_close(obs.view(E, N, -1), obs_store)
    actions = torch.arange(E * N) % 5
    obs, rew, term, trunc, infos = envs.step(actions)
    assert store(envs, Constants.ACTIONS)[:, :, 0].reshape(-1).tolist() == actions.tolist()
    torch.testing.assert_close(rew.view(E, N), store(envs, Constants.REWARDS))
    assert rew.data_ptr() == store(envs, Constants.REWARDS).data_ptr()
    envs.reset(seed=0)
    stay = torch.zeros(E * N, dtype=torch.long)  # taggers never reach the runner: time limit
    for t in range(1, 4):
        obs, rew, term, trunc, infos = envs.step(stay)
        assert not term.any()
        assert bool(trunc.all()) == (t == 3)
    assert infos["final_obs"].shape == (E * N, obs.shape[1]) and infos["_final_obs"].all()
    torch.testing.assert_close(infos["final_obs"][:, -1], torch.ones(E * N))  # time feature t/T = 1
    with pytest.raises(ConfigError, match="whole replicas"):
        envs.reset(options={"reset_mask": np.array([True] + [False] * (E * N - 1))})


# ----------------------------------------------------------------------------- inputs
def test_bad_inputs_are_refused():
    envs = cartpole(4)
    with pytest.raises(InteropError, match="reset"):
        envs.step(torch.zeros(4, dtype=torch.long))
    envs.reset()
    with pytest.raises(DataShapeError, match="4 rows"):
        envs.step(torch.zeros(3, dtype=torch.long))
    with pytest.raises(DataShapeError):
        envs.step(torch.zeros(4, 2, dtype=torch.long))
    with pytest.raises(DataTypeError, match="integers"):
        envs.step(torch.zeros(4))
    with pytest.raises(DataTypeError):
        envs.step(np.array([True, False, True, False]))
    envs.step(np.array([0, 1, 1, 0]))  # int64 NumPy
    envs.step(torch.tensor([[0], [1], [1], [0]], dtype=torch.int32))  # (num_envs, 1)
    envs.close()
    with pytest.raises(InteropError, match="closed"):
        envs.step(torch.zeros(4, dtype=torch.long))


def test_actions_are_checked_by_default():
    envs = cartpole(3)
    envs.reset()
    envs.step(torch.tensor([0, 1, 1]))
    with pytest.raises(ConfigError, match=r"sub-env 1: 2 \(allowed 0..1\)"):  # InvalidActionError is a ConfigError
        envs.step(torch.tensor([0, 2, 1]))


def test_construction_variants():
    inst = get_example_env_class("cartpole")(episode_length=5)
    envs = WarpDriveVectorEnv(inst, num_envs=2)
    assert envs.env is inst and envs.num_envs == 2
    wrapper = EnvWrapper(get_example_env_class("cartpole")(episode_length=5), num_envs=3, env_backend="cpu")
    envs = WarpDriveVectorEnv(wrapper)
    assert envs.num_envs == 3 and envs.wrapper is wrapper
    with pytest.raises(ConfigError, match="omit num_envs"):
        WarpDriveVectorEnv(wrapper, num_envs=2)
    with pytest.raises(ConfigError, match="backend"):
        WarpDriveVectorEnv("cartpole", num_envs=2, backend="tpu")


@pytest.mark.parametrize("name", ["cartpole", "acrobot", "mountain_car", "continuous_mountain_car", "pendulum"])
def test_every_classic_control_env_runs_through_the_adapter(name):
    envs = WarpDriveVectorEnv(name, num_envs=3, env_config=dict(episode_length=6, seed=0))
    envs.action_space.seed(0)
    obs, _ = envs.reset(seed=0)
    assert envs.observation_space.contains(obs.numpy())
    ended = 0
    for _ in range(7):
        obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
        assert envs.observation_space.contains(obs.numpy())
        assert torch.isfinite(rew).all()
        ended += int((term | trunc).sum())
        assert torch.equal(infos["_final_obs"], term | trunc)
    assert ended >= 3  # every replica reached the time limit (or ended before)


# ----------------------------------------------------------------------------- output="numpy"
from gymnasium.wrappers.vector import (  # noqa: E402
    ClipAction,
    ClipReward,
    DictInfoToList,
    NormalizeObservation,
    NormalizeReward,
    RescaleAction,
    TransformObservation,
)


def test_numpy_output_types_dtypes_and_spaces():
    envs = cartpole(5, output="numpy")
    obs, infos = envs.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and obs.shape == (5, 4)
    assert envs.observation_space.contains(obs) and infos == {}
    obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
    assert isinstance(obs, np.ndarray) and envs.observation_space.contains(obs)
    assert isinstance(rew, np.ndarray) and rew.dtype == np.float32 and rew.shape == (5,)
    assert term.dtype == trunc.dtype == np.bool_ and term.shape == trunc.shape == (5,)
    assert isinstance(infos["final_obs"], np.ndarray) and infos["final_obs"].shape == (5, 4)
    assert infos["_final_obs"].dtype == infos["_final_info"].dtype == np.bool_
    np.testing.assert_array_equal(rew, np.ones(5, np.float32))
    envs.step(torch.zeros(5, dtype=torch.long))  # torch actions still accepted


def test_numpy_output_views_and_copies_on_the_cpu_backend():
    envs = cartpole(3, output="numpy")
    obs, _ = envs.reset(seed=0)
    live = store(envs, Constants.OBSERVATIONS)
    assert np.shares_memory(obs, live.numpy())  # zero-copy view, overwritten by the next step
    copied = cartpole(3, output="numpy", copy=True)
    obs2, _ = copied.reset(seed=0)
    assert not np.shares_memory(obs2, store(copied, Constants.OBSERVATIONS).numpy())
    np.testing.assert_array_equal(obs, obs2)
    with pytest.raises(ConfigError, match="output='jax' is unknown"):
        cartpole(2, output="jax")


def test_numpy_output_matches_torch_output():
    a, b = cartpole(4), cartpole(4, output="numpy")
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    np.testing.assert_array_equal(oa.numpy(), ob)
    rng = np.random.default_rng(0)
    for _ in range(12):
        act = rng.integers(0, 2, 4)
        ra, rb = a.step(act), b.step(act)
        for x, y in zip(ra[:4], rb[:4]):
            np.testing.assert_array_equal(x.numpy(), y)
        np.testing.assert_array_equal(ra[4]["final_obs"].numpy(), rb[4]["final_obs"])
        np.testing.assert_array_equal(ra[4]["_final_obs"].numpy(), rb[4]["_final_obs"])


def test_record_episode_statistics_directly_on_numpy_output():
    envs = RecordEpisodeStatistics(cartpole(4, output="numpy", env_config=dict(episode_length=30, seed=0)))
    _, finished = _check_episode_statistics(envs, 80)
    assert envs.episode_count == len(finished) > 0


def test_gymnasium_observation_wrappers_refuse_same_step_and_run_with_next_step():
    with pytest.raises(ValueError, match="NEXT_STEP or DISABLED"):  # Gymnasium's own check
        NormalizeObservation(cartpole(2, output="numpy"))
    inner = cartpole(4, output="numpy", autoreset_mode=AutoresetMode.NEXT_STEP, env_config=dict(episode_length=20, seed=0))
    envs = ClipReward(NormalizeReward(NormalizeObservation(inner)), min_reward=-0.5, max_reward=0.5)
    envs = TransformObservation(envs, lambda o: o * 2.0, inner.observation_space)
    obs, _ = envs.reset(seed=0)
    raw = []
    for _ in range(40):
        obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
        raw.append(store(inner, Constants.OBSERVATIONS)[:, 0].numpy().copy())
        assert obs.shape == (4, 4) and np.isfinite(obs).all()
        assert np.all(np.abs(rew) <= 0.5)
    norm = envs.env.env.env  # NormalizeObservation
    assert norm.obs_rms.count > 40 * 4  # the running statistics saw every sub-env's observations
    assert not np.allclose(norm.obs_rms.mean, 0.0)


def test_gymnasium_action_wrappers_on_a_box_env():
    inner = WarpDriveVectorEnv("pendulum", num_envs=3, env_config=dict(episode_length=5, seed=0), output="numpy")
    envs = ClipAction(RescaleAction(inner, min_action=-1.0, max_action=1.0))
    envs.reset(seed=0)
    envs.step(np.array([[1.0], [-1.0], [5.0]], np.float32))  # 5 is clipped to 1, then rescaled to 2
    torch.testing.assert_close(store(inner, Constants.ACTIONS)[:, 0, 0], torch.tensor([2.0, -2.0, 2.0]))


def test_dict_info_to_list_on_numpy_output():
    envs = DictInfoToList(cartpole(3, output="numpy", env_config=dict(episode_length=2, seed=0)))
    envs.reset(seed=0)
    envs.step(np.zeros(3, int))
    _, _, _, trunc, infos = envs.step(np.zeros(3, int))
    assert trunc.all() and isinstance(infos, list) and len(infos) == 3
    assert all(info["final_obs"].shape == (4,) for info in infos)


def test_numpy_to_torch_on_numpy_output():
    pytest.importorskip("array_api_compat", reason="gymnasium's NumpyToTorch needs array_api_compat")
    from gymnasium.wrappers.vector import NumpyToTorch

    as_torch = NumpyToTorch(cartpole(3, output="numpy"))
    obs, _ = as_torch.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (3, 4)
    obs, rew, term, trunc, _ = as_torch.step(torch.zeros(3, dtype=torch.long))
    assert isinstance(rew, torch.Tensor) and isinstance(term, torch.Tensor)


# ----------------------------------------------------------------------------- other autoreset modes
def test_next_step_autoreset_matches_gymnasium_sync_vector_env():
    """Gymnasium's NEXT_STEP SyncVectorEnv vs the adapter, through a time-limit end and the reset step."""
    E, T = 4, 6
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=T) for _ in range(E)])
    assert ref.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    envs = cartpole(E, output="numpy", autoreset_mode="NextStep", env_config=dict(episode_length=T, seed=0))
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    ref_obs, _ = ref.reset(seed=10)
    obs, _ = envs.reset(seed=10)
    first = obs.copy()
    np.testing.assert_array_equal(obs, ref_obs)
    actions = np.array([0, 1, 1, 0])
    for t in range(1, T + 1):  # alternate actions: the pole stays up for 6 steps
        act = actions if t % 2 else 1 - actions
        ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(act)
        obs, rew, term, trunc, infos = envs.step(act)
        np.testing.assert_allclose(obs, ref_obs, atol=1e-5)  # at t = T: the final observations
        np.testing.assert_array_equal(rew, ref_rew)
        np.testing.assert_array_equal(term, ref_term)
        np.testing.assert_array_equal(trunc, ref_trunc)
        assert infos == {}
    assert trunc.all()
    # the reset step: actions ignored, reward 0, no end; the observation is the replica's start
    ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(actions)
    obs, rew, term, trunc, _ = envs.step(actions)
    np.testing.assert_array_equal(rew, ref_rew)
    assert not (term | trunc | ref_term | ref_trunc).any()
    np.testing.assert_array_equal(obs, first)
    assert store(envs, Constants.TIMESTEP).tolist() == [0] * E
    obs, rew, *_ = envs.step(actions)  # and the next episode runs normally
    np.testing.assert_array_equal(rew, np.ones(E, np.float32))
    assert store(envs, Constants.TIMESTEP).tolist() == [1] * E


def test_next_step_only_delays_the_ended_sub_envs():
    envs = cartpole(3, autoreset_mode=AutoresetMode.NEXT_STEP, env_config=dict(episode_length=50, seed=0))
    envs.reset(seed=1)
    for _ in range(50):  # push sub-env 0 right until it falls; the others balance
        obs, rew, term, trunc, _ = envs.step(torch.tensor([1, 0, 1]) if _ % 2 else torch.tensor([1, 1, 0]))
        if term[0]:
            break
    assert term[0] and not term[1:].any()
    ended_t = store(envs, Constants.TIMESTEP).clone()
    obs, rew, term, trunc, _ = envs.step(torch.tensor([1, 0, 1]))
    assert rew.tolist()[0] == 0.0 and rew.tolist()[1:] == [1.0, 1.0]
    assert store(envs, Constants.TIMESTEP)[0] == 0 and bool((store(envs, Constants.TIMESTEP)[1:] == ended_t[1:] + 1).all())


def test_record_episode_statistics_in_next_step_mode():
    envs = RecordEpisodeStatistics(
        cartpole(2, output="numpy", autoreset_mode=AutoresetMode.NEXT_STEP, env_config=dict(episode_length=5, seed=0))
    )
    envs.reset(seed=0)
    lengths, expected, running, resetting = [], [], np.zeros(2, int), np.zeros(2, bool)
    for t in range(13):
        _, rew, term, trunc, infos = envs.step(np.array([t % 2, 1 - t % 2]))
        running[~resetting] += 1  # the reset step after an end is not part of any episode
        assert np.all(rew[resetting] == 0)
        done = term | trunc
        if done.any():
            lengths += list(infos["episode"]["l"][infos["_episode"]])
            expected += list(running[done])
            running[done] = 0
        resetting = done
    assert lengths == expected and lengths.count(5) == len(lengths) == 4  # 13 steps: 5 + reset + 5 + reset + 1
    assert envs.episode_count == 4


def test_disabled_autoreset_needs_a_masked_reset():
    envs = cartpole(2, autoreset_mode=AutoresetMode.DISABLED, env_config=dict(episode_length=2, seed=0))
    envs.reset(seed=0)
    envs.step(torch.zeros(2, dtype=torch.long))
    obs, rew, term, trunc, infos = envs.step(torch.zeros(2, dtype=torch.long))
    assert trunc.all() and infos == {}
    assert store(envs, Constants.TIMESTEP).tolist() == [2, 2]  # not reset
    with pytest.raises(InteropError, match="reset_mask"):
        envs.step(torch.zeros(2, dtype=torch.long))
    envs.reset(options={"reset_mask": np.array([True, True])})
    envs.step(torch.zeros(2, dtype=torch.long))
    with pytest.raises(ConfigError, match="autoreset_mode='Sometimes' is unknown"):
        cartpole(2, autoreset_mode="Sometimes")


# ----------------------------------------------------------------------------- seeding what an env drew once
def test_reset_seed_redraws_tag_roles_for_every_replica():
    config = dict(num_taggers=2, num_runners=4, episode_length=20, tagging_distance=0.2)
    a, b = (WarpDriveVectorEnv("tag_continuous", num_envs=3, env_config=config, flatten_agents=True) for _ in range(2))
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    torch.testing.assert_close(oa, ob)  # built without an env seed, identical after reset(seed=5)
    fresh = get_example_env_class("tag_continuous")(**config, seed=5)
    assert store(a, "agent_types").tolist() == fresh.agent_types.tolist()
    rng = np.random.default_rng(0)
    for _ in range(8):
        act = torch.as_tensor(rng.integers(0, 3, (a.num_envs, 2)))
        ra, rb = a.step(act), b.step(act)
        for x, y in zip(ra[:4], rb[:4]):
            torch.testing.assert_close(x, y)
    roles = store(a, "agent_types").clone()
    a.reset(seed=9, options={"reset_mask": np.repeat([True, False, False], 6)})
    assert torch.equal(store(a, "agent_types"), roles)  # a partial reset keeps the running replicas' roles
