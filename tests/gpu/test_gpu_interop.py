"""Interop adapters on the pycuda backend: outputs equal the data store, tensors are CUDA views of it,
PettingZoo's API test passes, and results match the cpu backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

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
