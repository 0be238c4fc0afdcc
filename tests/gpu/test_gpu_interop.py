"""Interop adapters on the pycuda backend: outputs equal the data store, tensors are CUDA views of it,
PettingZoo's API test passes, and results match the cpu backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

import example_envs  # noqa: E402,F401 - registers the example envs by name (the adapters look names up there)
from warp_drive.interop._common import split_done
from warp_drive.utils.constants import Constants

CARTPOLE = dict(episode_length=10, seed=0)
GRID = dict(num_taggers=3, grid_length=4, episode_length=20)


def _vec(backend: str, num_envs: int = 64, **kwargs):
    from warp_drive.interop import WarpDriveVectorEnv

    name = kwargs.pop("name", "cartpole")
    config = kwargs.pop("env_config", CARTPOLE)
    return WarpDriveVectorEnv(name, num_envs=num_envs, env_config=config, backend=backend, **kwargs)


def test_vector_env_outputs_are_cuda_views_of_the_store():
    envs = _vec("pycuda")
    dm = envs.data_manager
    obs, _ = envs.reset(seed=0)
    obs_store = dm.data_on_device_via_torch(Constants.OBSERVATIONS)
    rew_store = dm.data_on_device_via_torch(Constants.REWARDS)
    assert obs.is_cuda and obs_store.is_cuda and envs.device.type == "cuda"
    assert obs.data_ptr() == obs_store.data_ptr()
    np.testing.assert_array_equal(obs.cpu().numpy(), dm.pull_data_from_device(Constants.OBSERVATIONS)[:, 0])
    gen = torch.Generator(device="cuda").manual_seed(0)
    for _ in range(25):
        actions = torch.randint(0, 2, (64,), device="cuda", generator=gen)
        obs, rew, term, trunc, infos = envs.step(actions)
        for t in (obs, rew, term, trunc, infos["final_obs"], infos["_final_obs"]):
            assert t.is_cuda
        assert obs.data_ptr() == obs_store.data_ptr() and rew.data_ptr() == rew_store.data_ptr()
        assert infos["final_obs"].data_ptr() != obs.data_ptr()
        np.testing.assert_array_equal(obs.cpu().numpy(), dm.pull_data_from_device(Constants.OBSERVATIONS)[:, 0])
        np.testing.assert_array_equal(rew.cpu().numpy(), dm.pull_data_from_device(Constants.REWARDS)[:, 0])
        assert torch.equal(infos["_final_obs"], term | trunc)
        assert dm.data_on_device_via_torch(Constants.ACTIONS)[:, 0, 0].tolist() == actions.tolist()
    # writes through the store are visible in the returned tensor
    obs_store.fill_(3.0)
    torch.cuda.synchronize()
    assert torch.all(obs == 3.0)


def test_split_done_on_the_device_matches_the_store_flags():
    envs = _vec("pycuda", num_envs=32)
    envs.reset(seed=1)
    dm = envs.data_manager
    for _ in range(12):
        envs._write_actions(torch.ones(32, dtype=torch.long, device="cuda"))
        envs.wrapper.step_all_envs()
        done = dm.pull_data_from_device(Constants.DONE)
        t = dm.pull_data_from_device(Constants.TIMESTEP)
        term, trunc = split_done(
            dm.data_on_device_via_torch(Constants.DONE), dm.data_on_device_via_torch(Constants.TIMESTEP), 10
        )
        want_trunc = (done == 1) & (t >= 10)
        np.testing.assert_array_equal(trunc.cpu().numpy(), want_trunc)
        np.testing.assert_array_equal(term.cpu().numpy(), (done > 0) & ~want_trunc)
        envs.wrapper.reset_only_done_envs()


def test_vector_env_pycuda_matches_cpu_backend():
    gpu, cpu = _vec("pycuda", 16), _vec("cpu", 16)
    og, _ = gpu.reset(seed=5)
    oc, _ = cpu.reset(seed=5)
    np.testing.assert_array_equal(og.cpu().numpy(), oc.numpy())  # host-drawn starts: identical
    rng = np.random.default_rng(0)
    for _ in range(30):
        a = rng.integers(0, 2, 16)
        rg, rc = gpu.step(torch.as_tensor(a, device="cuda")), cpu.step(a)
        np.testing.assert_allclose(rg[0].cpu().numpy(), rc[0].numpy(), atol=1e-5)
        np.testing.assert_allclose(rg[1].cpu().numpy(), rc[1].numpy())
        np.testing.assert_array_equal(rg[2].cpu().numpy(), rc[2].numpy())
        np.testing.assert_array_equal(rg[3].cpu().numpy(), rc[3].numpy())
        np.testing.assert_allclose(rg[4]["final_obs"].cpu().numpy(), rc[4]["final_obs"].numpy(), atol=1e-5)


def test_vector_env_flatten_agents_on_the_gpu():
    envs = _vec("pycuda", 4, name="tag_gridworld", env_config=dict(GRID, episode_length=3), flatten_agents=True)
    obs, _ = envs.reset(seed=0)
    store = envs.data_manager.data_on_device_via_torch(Constants.OBSERVATIONS)
    assert obs.is_cuda and obs.data_ptr() == store.data_ptr() and obs.shape[0] == 16
    for _ in range(3):
        _, _, term, trunc, _ = envs.step(np.zeros(16, np.int64))
    assert trunc.all() and not term.any()


def test_pettingzoo_parallel_api_test_pycuda_tag_gridworld():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from warp_drive.interop import WarpDrivePettingZooEnv

    env = WarpDrivePettingZooEnv("tag_gridworld", GRID, backend="pycuda")
    assert env.data_manager.data_on_device_via_torch(Constants.OBSERVATIONS).is_cuda
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        parallel_api_test(env, num_cycles=60)


def test_pettingzoo_pycuda_outputs_equal_the_store_and_the_cpu_backend():
    pytest.importorskip("pettingzoo")
    from warp_drive.interop import WarpDrivePettingZooEnv

    gpu = WarpDrivePettingZooEnv("tag_gridworld", GRID, backend="pycuda")
    cpu = WarpDrivePettingZooEnv("tag_gridworld", GRID, backend="cpu")
    og, _ = gpu.reset(seed=0)
    oc, _ = cpu.reset(seed=0)
    rng = np.random.default_rng(3)
    while gpu.agents:
        assert gpu.agents == cpu.agents
        store = gpu.data_manager.pull_data_from_device(Constants.OBSERVATIONS)[0]
        for k, agent in enumerate(gpu.possible_agents):
            np.testing.assert_array_equal(og[agent], store[k])
            np.testing.assert_array_equal(og[agent], oc[agent])  # integer grid dynamics: exact
        actions = {a: int(rng.integers(0, 5)) for a in gpu.agents}
        og, rg, tg, trg, _ = gpu.step(actions)
        oc, rc, tc, trc, _ = cpu.step(actions)
        rew = gpu.data_manager.pull_data_from_device(Constants.REWARDS)[0]
        for k, agent in enumerate(gpu.possible_agents):
            assert rg[agent] == float(rew[k])
        assert rg == pytest.approx(rc) and tg == tc and trg == trc
    assert cpu.agents == []


# ----------------------------------------------------------------------------- issue 14: numpy output, autoreset modes, reseeding
def test_vector_env_numpy_output_pycuda_matches_cpu_backend():
    gpu, cpu = _vec("pycuda", 16, output="numpy"), _vec("cpu", 16, output="numpy")
    og, _ = gpu.reset(seed=5)
    oc, _ = cpu.reset(seed=5)
    assert isinstance(og, np.ndarray) and og.dtype == np.float32
    np.testing.assert_array_equal(og, oc)
    rng = np.random.default_rng(0)
    for _ in range(30):
        a = rng.integers(0, 2, 16)
        rg, rc = gpu.step(a), cpu.step(a)
        for x in rg[:4]:
            assert isinstance(x, np.ndarray)
        np.testing.assert_allclose(rg[0], rc[0], atol=1e-5)
        np.testing.assert_allclose(rg[1], rc[1])
        np.testing.assert_array_equal(rg[2], rc[2])
        np.testing.assert_array_equal(rg[3], rc[3])
        np.testing.assert_allclose(rg[4]["final_obs"], rc[4]["final_obs"], atol=1e-5)
        np.testing.assert_array_equal(rg[4]["_final_obs"], rc[4]["_final_obs"])


@pytest.mark.parametrize("mode", ["NextStep", "Disabled"])
def test_vector_env_autoreset_modes_pycuda_match_cpu_backend(mode):
    config = dict(episode_length=6, seed=0)
    gpu = _vec("pycuda", 8, env_config=config, autoreset_mode=mode)
    cpu = _vec("cpu", 8, env_config=config, autoreset_mode=mode)
    np.testing.assert_array_equal(gpu.reset(seed=2)[0].cpu().numpy(), cpu.reset(seed=2)[0].numpy())
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = rng.integers(0, 2, 8)
        rg, rc = gpu.step(torch.as_tensor(a, device="cuda")), cpu.step(a)
        assert rg[0].is_cuda and rg[1].is_cuda
        np.testing.assert_allclose(rg[0].cpu().numpy(), rc[0].numpy(), atol=1e-5)
        np.testing.assert_allclose(rg[1].cpu().numpy(), rc[1].numpy())
        np.testing.assert_array_equal(rg[2].cpu().numpy(), rc[2].numpy())
        np.testing.assert_array_equal(rg[3].cpu().numpy(), rc[3].numpy())
        ended = (rc[2] | rc[3]).numpy()
        if mode == "Disabled" and ended.any():  # nothing resets by itself: reset what ended
            gpu.reset(options={"reset_mask": ended})
            cpu.reset(options={"reset_mask": ended})


@pytest.mark.parametrize("name, config", [
    ("tag_continuous", dict(num_taggers=2, num_runners=4, episode_length=30, tagging_distance=0.2)),
    ("tag_gridworld_with_reset_pool", dict(num_taggers=3, grid_length=4, episode_length=20, reset_pool_size=8)),
    ("cartpole", dict(reset_pool_size=8, episode_length=40)),
])
def test_pettingzoo_parallel_seed_test_pycuda_without_an_env_seed(name, config):
    """reset(seed=...) re-seeds roles and reset pools and writes them to the device arrays."""
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_seed_test

    from warp_drive.interop import WarpDrivePettingZooEnv

    parallel_seed_test(lambda: WarpDrivePettingZooEnv(name, config, backend="pycuda"), num_cycles=40)
    gpu = WarpDrivePettingZooEnv(name, config, backend="pycuda")
    cpu = WarpDrivePettingZooEnv(name, config, backend="cpu")
    og, _ = gpu.reset(seed=4)
    oc, _ = cpu.reset(seed=4)
    for agent in gpu.possible_agents:
        np.testing.assert_array_equal(og[agent], oc[agent])
    for array in ("agent_types", "tagger_ids", "loc_x_reset_pool", "state_reset_pool"):
        if gpu.data_manager.is_data_on_device(array):
            np.testing.assert_array_equal(gpu.data_manager.pull_data_from_device(array),
                                          cpu.data_manager.pull_data_from_device(array))


def test_skrl_ppo_runs_on_the_pycuda_backend():
    pytest.importorskip("skrl")
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "skrl_ppo.py"
    spec = importlib.util.spec_from_file_location("skrl_ppo_example", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--backend", "pycuda", "--num-envs", "64", "--timesteps", "400", "--quiet"])
    assert result["episodes"] > 64 and all(np.isfinite(result["returns"]))
