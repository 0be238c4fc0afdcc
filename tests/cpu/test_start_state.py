"""Fresh start states (the env contract's start-state hook) on the cpu backend.

The NumPy hooks are the specification of the CUDA hooks; tests/gpu/test_env_consistency.py runs
both from the same state and compares them after every reset.
"""

from __future__ import annotations

import numpy as np
import pytest

from example_envs import get_example_env_class
from warp_drive.cuda.start_state_kernel import find_start_state_hooks, render_start_state_kernels, reset_kernel
from warp_drive.env import Constants
from warp_drive.vocab.start_state import START_STREAM, StartKey, uniform_in
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError, KernelSignatureError
from warp_drive.utils.philox import philox_words

CLASSIC = ["cartpole", "acrobot", "mountain_car", "continuous_mountain_car", "pendulum"]
TAG_CONT = dict(num_taggers=2, num_runners=9, grid_length=10.0, episode_length=15, seed=5,
                tagging_distance=0.05)
GRID = dict(num_taggers=3, grid_length=6, episode_length=12, seed=5)
CONFIGS = {
    **{name: (name, {"episode_length": 30, "seed": 5}) for name in CLASSIC},
    "tag_continuous full": ("tag_continuous", dict(TAG_CONT, use_full_observation=True)),
    "tag_continuous K=3": ("tag_continuous", dict(TAG_CONT, use_full_observation=False, num_other_agents_observed=3)),
    "tag_gridworld full": ("tag_gridworld", dict(GRID, use_full_observation=True)),
    "tag_gridworld partial": ("tag_gridworld", dict(GRID, use_full_observation=False)),
}
#: The arrays a fresh start draws, per env.
DRAWN = {"tag_continuous": ("loc_x", "loc_y", "direction"), "tag_gridworld": ("loc_x", "loc_y")}


def _wrapper(key: str, num_envs: int = 24, **overrides) -> EnvWrapper:
    name, config = CONFIGS[key]
    env = get_example_env_class(name)(**{**config, "fresh_start_states": True, **overrides})
    w = EnvWrapper(env, num_envs=num_envs, env_backend="cpu")
    w.reset_all_envs()
    return w


def _drawn(w: EnvWrapper, key: str) -> np.ndarray:
    names = DRAWN.get(CONFIGS[key][0], ("state",))
    return np.concatenate([w.cuda_data_manager.pull_data_from_device(n).reshape(w.n_envs, -1) for n in names], axis=1)


def _obs(w: EnvWrapper) -> np.ndarray:
    return w.cuda_data_manager.pull_data_from_device(Constants.OBSERVATIONS).copy()


# ----------------------------------------------------------------------------- the draws
def test_start_key_words_are_philox_on_the_start_stream() -> None:
    key = StartKey(7, np.array([0, 3], np.uint32), np.array([2, 9], np.uint32))
    np.testing.assert_array_equal(key.words(4), philox_words(7, START_STREAM, [0, 3], [2, 9], 4))
    slots = key.words(np.arange(3))
    assert slots.shape == (2, 3, 4)
    np.testing.assert_array_equal(slots[1, 2], philox_words(7, START_STREAM, 3, 9, 2))
    assert START_STREAM == int.from_bytes(b"strt", "big")


def test_uniform_in_stays_in_range_and_hits_both_ends() -> None:
    words = np.array([0, 0xFFFFFFFF, 0x80000000], np.uint32)
    u = uniform_in(words, -0.6, -0.4)
    assert u.dtype == np.float32 and u[0] == np.float32(-0.6) and -0.6 <= u.min() and u.max() < -0.4
    np.testing.assert_array_equal(uniform_in(words, 0.0, 0.0), np.zeros(3, np.float32))


def test_the_start_stream_constant_is_the_cuda_one() -> None:
    from warp_drive.cuda import core_dir

    text = (core_dir() / "start_state.cuh").read_text()
    assert f"#define WK_START_STREAM 0x{START_STREAM:08X}u" in text


# ----------------------------------------------------------------------------- the rendered kernel
def test_render_finds_hooks_and_passes_their_arguments() -> None:
    source = "// x\n__device__ void MyEnvStartState(WkStartKey start, float* x_arr, const int* y_arr, float s) { }\n"
    assert find_start_state_hooks(source) == {"MyEnv": "float* x_arr, const int* y_arr, float s"}
    code = render_start_state_kernels(source)
    assert f'extern "C" __global__ void {reset_kernel("MyEnv")}(' in code
    assert "MyEnvStartState(wk_key, x_arr, y_arr, s);" in code
    assert "float* x_arr, const int* y_arr, float s) {" in code
    assert render_start_state_kernels("__global__ void CudaMyEnvStep(float* x) {}") == ""


def test_render_rejects_reserved_parameter_names() -> None:
    with pytest.raises(KernelSignatureError, match="wk_ prefix is reserved"):
        render_start_state_kernels("__device__ void AStartState(WkStartKey k, float* wk_dst) {}")


@pytest.mark.parametrize("name", [*CLASSIC, "tag_continuous", "tag_gridworld"])
def test_every_example_env_source_defines_its_hook_with_its_arguments(name: str) -> None:
    cls = get_example_env_class(name)
    params = find_start_state_hooks(cls.cuda_source.read_text())[cls.name]
    assert len([p for p in params.split(",") if p.strip()]) == len(cls.start_state_args)


# ----------------------------------------------------------------------------- behaviour
@pytest.mark.parametrize("key", list(CONFIGS))
def test_every_replica_starts_differently_and_reproducibly(key: str) -> None:
    w = _wrapper(key)
    starts = _drawn(w, key)
    assert len({row.tobytes() for row in starts}) == w.n_envs  # one distinct start per replica
    again = _wrapper(key)
    np.testing.assert_array_equal(_drawn(again, key), starts)  # same seed, same starts
    np.testing.assert_array_equal(_obs(again), _obs(w))
    other = _wrapper(key, seed=6)
    assert not np.array_equal(_drawn(other, key), starts)


@pytest.mark.parametrize("key", list(CONFIGS))
def test_done_envs_get_a_new_start_and_the_others_keep_theirs(key: str) -> None:
    w = _wrapper(key)
    dm = w.cuda_data_manager
    before, obs_before = _drawn(w, key).copy(), _obs(w)
    done = dm.data_on_device_via_torch(Constants.DONE)
    done[[1, 4]] = 1
    dm.data_on_device_via_torch(Constants.TIMESTEP)[[1, 4]] = 7
    w.reset_only_done_envs()
    after, obs_after = _drawn(w, key), _obs(w)
    keep = np.setdiff1d(np.arange(w.n_envs), [1, 4])
    np.testing.assert_array_equal(after[keep], before[keep])
    np.testing.assert_array_equal(obs_after[keep], obs_before[keep])
    for e in (1, 4):
        assert not np.array_equal(after[e], before[e])  # episode 1's start, not episode 0's
    assert done.sum() == 0 and dm.data_on_device_via_torch(Constants.TIMESTEP)[[1, 4]].sum() == 0


@pytest.mark.parametrize("name", CLASSIC)
def test_classic_control_starts_follow_gymnasiums_distribution(name: str) -> None:
    w = _wrapper(name, num_envs=400)
    env = w.env
    state = w.cuda_data_manager.pull_data_from_device("state")[:, 0, :]
    low, high = (np.asarray(b, np.float32) for b in env.start_bounds())
    assert np.all(state >= low) and np.all((state < high) | (low == high))
    spread = (high - low) > 0
    # uniform: each drawn component covers its range (400 draws: min/max within 3% of the ends)
    assert np.all(state[:, spread].min(0) < low[spread] + 0.03 * (high - low)[spread])
    assert np.all(state[:, spread].max(0) > high[spread] - 0.03 * (high - low)[spread])
    np.testing.assert_array_equal(_obs(w)[:, 0, :], env.observe(state))


def test_tag_continuous_observations_after_a_fresh_start_are_the_steps_observations() -> None:
    from example_envs.tag_continuous.tag_continuous import compute_observations

    w = _wrapper("tag_continuous K=3")
    dm, env = w.cuda_data_manager, w.env
    d = {n: dm.pull_data_from_device(n) for n in ("loc_x", "loc_y", "speed", "acceleration", "direction", "still_in_the_game")}
    expected = compute_observations(d["loc_x"], d["loc_y"], d["speed"], d["acceleration"], d["direction"],
                                    env.agent_types, d["still_in_the_game"], np.zeros(w.n_envs, np.int32),
                                    env.episode_length, np.float32(env.grid_length), np.float32(env.max_speed), False, 3)
    np.testing.assert_array_equal(_obs(w), expected)
    assert set(np.unique(d["direction"])) <= {np.float32(v) for v in (0.0, np.pi / 2, np.pi, 3 * np.pi / 2)}


def test_tag_continuous_keeps_given_starting_values_fixed() -> None:
    xs = np.linspace(0.5, 9.5, 11)
    w = _wrapper("tag_continuous full", starting_location_x=xs)
    dm = w.cuda_data_manager
    np.testing.assert_array_equal(dm.pull_data_from_device("loc_x"), np.broadcast_to(xs.astype(np.float32), (w.n_envs, 11)))
    assert len({row.tobytes() for row in dm.pull_data_from_device("loc_y")}) == w.n_envs


def test_gridworld_refuses_fresh_starts_with_starting_locations() -> None:
    with pytest.raises(ConfigError, match="fresh_start_states"):
        get_example_env_class("tag_gridworld")(**GRID, fresh_start_states=True, starting_location_x=[0, 1, 2, 3])


@pytest.mark.parametrize("name", ["tag_continuous", "tag_gridworld", "cartpole"])
def test_without_opting_in_every_replica_restores_the_one_saved_start(name: str) -> None:
    key = {"tag_continuous": "tag_continuous full", "tag_gridworld": "tag_gridworld full"}.get(name, name)
    w = _wrapper(key, fresh_start_states=False)
    assert not w.fresh_start_states and w.supports_fresh_start_states
    assert len({row.tobytes() for row in _drawn(w, key)}) == 1  # 2.7.1's semantics


def test_fresh_starts_can_be_switched_at_run_time() -> None:
    w = _wrapper("cartpole", fresh_start_states=False)
    w.fresh_start_states = True
    w.reset_all_envs()
    assert len({row.tobytes() for row in _drawn(w, "cartpole")}) == w.n_envs
    w.fresh_start_states = False
    w.reset_all_envs()
    assert len({row.tobytes() for row in _drawn(w, "cartpole")}) == 1


def test_an_env_without_a_hook_refuses_fresh_starts() -> None:
    cls = get_example_env_class("dummy_env")
    w = EnvWrapper(cls(), num_envs=2, env_backend="cpu")
    w.reset_all_envs()
    assert not w.supports_fresh_start_states
    with pytest.raises(ConfigError, match="no start-state hook"):
        w.fresh_start_states = True


def test_fresh_start_states_must_be_a_bool() -> None:
    with pytest.raises(ConfigError, match="fresh_start_states"):
        get_example_env_class("cartpole")(fresh_start_states="yes")
    with pytest.raises(ConfigError, match="fresh_start_states"):
        get_example_env_class("tag_continuous")(fresh_start_states=1)


def test_a_block_of_envs_resets_as_the_whole_batch_does() -> None:
    """The cpu rollout resets blocks of envs in threads (env_offset): same starts as one batch."""
    whole, parts = _wrapper("tag_continuous K=3", num_envs=10), _wrapper("tag_continuous K=3", num_envs=10)
    for w in (whole, parts):
        w.cuda_data_manager.data_on_device_via_torch(Constants.DONE)[:] = 1
    whole.reset_only_done_envs()
    dm, resetter = parts.cuda_data_manager, parts.env_resetter
    view = dm.host_view()
    per_env = set(dm.reset_data_list) | {Constants.OBSERVATIONS}
    for lo, hi in ((0, 4), (4, 10)):
        block = {k: (v[lo:hi] if k in per_env else v) for k, v in view.items()}
        reset = resetter.rows_reset(dm, lo, hi, parts.env, block)
        reset(dm.data_on_device_via_torch(Constants.DONE)[lo:hi], dm.data_on_device_via_torch(Constants.TIMESTEP)[lo:hi])
    for name in ("loc_x", "loc_y", "direction", Constants.OBSERVATIONS):
        np.testing.assert_array_equal(dm.pull_data_from_device(name), whole.cuda_data_manager.pull_data_from_device(name))
