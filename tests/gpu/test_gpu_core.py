"""GPU suite for the foundation: data store, compile cache, kernels, sampler, resets, logs, scale."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def toy_gpu(tmp_path_factory):
    from tests.helpers.toy_env import ToyLine
    from warp_drive.env.env_wrapper import EnvWrapper

    src = tmp_path_factory.mktemp("toy")
    w = EnvWrapper(ToyLine(num_agents=5, episode_length=7, source_dir=str(src)), num_envs=3, env_backend="pycuda")
    w.reset_all_envs()
    return w


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.int64])
@pytest.mark.parametrize("shape", [(4,), (4, 3), (4, 3, 2), (4, 3, 2, 5)])
def test_push_pull_round_trip(dtype, shape):
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.utils.data_feed import DataFeed

    dm = PyCUDADataManager(num_agents=3, num_envs=4, episode_length=5)
    rng = np.random.default_rng(0)
    data = (rng.normal(size=shape) * 100).astype(dtype)
    feed = DataFeed()
    feed.add_data("a", data, save_copy_and_apply_at_reset=True)
    dm.push_data_to_device(feed, torch_accessible=True)
    out = dm.pull_data_from_device("a")
    want = np.float32 if np.dtype(dtype).kind == "f" else np.int32
    assert out.dtype == want and out.shape == shape
    np.testing.assert_array_equal(out, data.astype(want))
    assert dm.data_on_device_via_torch("a").is_cuda


def test_torch_and_kernels_share_memory():
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    dm = PyCUDADataManager(num_agents=4, num_envs=3, episode_length=2)
    dm.push_data_to_device({"v": np.zeros((3, 4), np.float32)}, torch_accessible=True)
    fm = PyCUDAFunctionManager(num_agents=4, num_envs=3)
    fm.load_cuda_from_source_code(
        'extern "C" __global__ void add_ids(float* v) { const int e = wkEnvId(), a = wkAgentId();'
        " if (a < wkNumberAgents) v[e * wkNumberAgents + a] += 10.0f * e + a; }"
    )
    fm.initialize_functions(["add_ids"])
    t = dm.data_on_device_via_torch("v")
    t.fill_(1.0)  # torch writes ...
    fm.launch("add_ids", [t])  # ... the kernel adds ...
    expected = 1.0 + 10.0 * np.arange(3)[:, None] + np.arange(4)[None, :]
    np.testing.assert_array_equal(t.cpu().numpy(), expected)  # ... torch reads the kernel's result
    np.testing.assert_array_equal(dm.pull_data_from_device("v"), expected)


def test_compile_cache_hit_and_errors(tmp_path, monkeypatch):
    from warp_drive.errors import CUDACompileError, GeometryError
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path))
    code = 'extern "C" __global__ void noop(float* v) { v[0] = wkNumberAgents; }'
    t0 = time.perf_counter()
    p1 = PyCUDAFunctionManager(num_agents=3, num_envs=2).load_cuda_from_source_code(code)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    p2 = PyCUDAFunctionManager(num_agents=3, num_envs=2).load_cuda_from_source_code(code)
    warm = time.perf_counter() - t0
    assert p1 == p2 and warm < cold
    p3 = PyCUDAFunctionManager(num_agents=4, num_envs=2).load_cuda_from_source_code(code)
    assert p3 != p1
    with pytest.raises(CUDACompileError, match="nvcc"):
        PyCUDAFunctionManager(num_agents=3, num_envs=2).load_cuda_from_source_code("this is not CUDA")
    with pytest.raises(GeometryError, match="blocks_per_env=2"):
        PyCUDAFunctionManager(num_agents=1030, num_envs=2, blocks_per_env=1)


def test_signature_checked_before_first_launch(tmp_path):
    from tests.helpers.toy_env import ToyLine
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.errors import KernelSignatureError

    class Swapped(ToyLine):
        step_kernel_args = ("x", "sampled_actions", "rewards", "observations", "at_goal", "_done_", "_timestep_",
                            "goal", ("episode_length", "meta"))

    w = EnvWrapper(Swapped(source_dir=str(tmp_path)), num_envs=2, env_backend="pycuda")
    with pytest.raises(KernelSignatureError, match="order"):
        w.reset_all_envs()


SHARED_KERNEL = """
extern "C" __constant__ int Fill_dynamic_shared_bytes = BYTES;
extern "C" __global__ void Fill(int* total_arr) {
  extern __shared__ int buffer[];
  const int n = BYTES / 4;
  for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = i;
  __syncthreads();
  int sum = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += buffer[n - 1 - i];
  atomicAdd(total_arr, sum);
}
"""


@pytest.mark.parametrize("kib", [8, 80, 200])
def test_kernel_declared_dynamic_shared_memory(kib):
    """A kernel states its dynamic shared memory in K_dynamic_shared_bytes; above 48 KiB the
    manager opts it in; every int of the buffer is written and read back."""
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    fm = PyCUDAFunctionManager(num_agents=128, num_envs=1)
    if kib * 1024 > fm.max_shared_bytes:
        pytest.skip(f"this GPU allows {fm.max_shared_bytes} bytes of shared memory per block")
    fm.load_cuda_from_source_code(SHARED_KERNEL.replace("BYTES", str(kib * 1024)))
    fm.initialize_functions(["Fill"])
    total = torch.zeros(1, dtype=torch.int32, device="cuda")
    fm.launch("Fill", [total], grid=(1, 1), block=(128, 1, 1))
    n = kib * 1024 // 4
    assert total.item() == n * (n - 1) // 2
    assert fm._get_function("Fill").shared_bytes == kib * 1024


def test_dynamic_shared_memory_beyond_the_device_is_a_geometry_error():
    from warp_drive.errors import GeometryError
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    fm = PyCUDAFunctionManager(num_agents=128, num_envs=1)
    fm.load_cuda_from_source_code(SHARED_KERNEL.replace("BYTES", str(1024 * 1024)))
    with pytest.raises(GeometryError, match="shared memory"):
        fm.initialize_functions(["Fill"])


def _cpu_twin(n_envs, n_agents, n_actions):
    from warp_drive.managers.data_manager import CPUDataManager
    from warp_drive.managers.function_manager import CPUFunctionManager
    from warp_drive.services.sampler import Sampler

    dm = CPUDataManager(num_agents=n_agents, num_envs=n_envs, episode_length=2)
    dm.push_data_to_device({"sampled_actions": np.zeros((n_envs, n_agents, 1), np.int32)}, torch_accessible=True)
    s = Sampler(CPUFunctionManager(n_agents, n_envs))
    s.init_random(123)
    s.register_actions(dm, "sampled_actions", n_actions)
    return dm, s


# 4 and 21 actions: rows staged in shared memory; 40: 256 x 40 floats exceed the tile, global reads
@pytest.mark.parametrize("A", [4, 21, 40])
def test_sampler_frequencies_seed_and_cpu_parity(A):
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager
    from warp_drive.services.sampler import Sampler

    E, N = 100, 50
    dm = PyCUDADataManager(num_agents=N, num_envs=E, episode_length=2)
    dm.push_data_to_device({"sampled_actions": np.zeros((E, N, 1), np.int32)}, torch_accessible=True)
    fm = PyCUDAFunctionManager(N, E)
    fm.load_cuda_from_source_code("")
    s = Sampler(fm)
    s.init_random(123)
    s.register_actions(dm, "sampled_actions", A)
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(A), size=(E, N)).astype(np.float32)
    p[0, 0] = 0.0
    p[0, 0, 1] = 1.0  # degenerate row
    p[0, 1] = 0.0
    p[0, 1, [0, 2]] = 0.5  # zero-probability actions
    probs = torch.from_numpy(p).cuda()
    cdm, cs = _cpu_twin(E, N, A)
    counts = np.zeros((E, N, A))
    lp_gpu, lp_cpu = torch.zeros((E, N), device="cuda"), torch.zeros((E, N))
    for i in range(40):  # 40 x 5000 rows = 2e5 draws
        s.sample(dm, probs, "sampled_actions", check=(i == 0), log_probs=lp_gpu)
        cs.sample(cdm, torch.from_numpy(p), "sampled_actions", log_probs=lp_cpu)
        g = dm.pull_data_from_device("sampled_actions")
        np.testing.assert_array_equal(g, cdm.pull_data_from_device("sampled_actions"))  # bit-exact twin
        np.testing.assert_allclose(lp_gpu.cpu().numpy(), lp_cpu.numpy(), rtol=1e-6, atol=1e-7)
        counts[np.arange(E)[:, None], np.arange(N)[None, :], g[..., 0]] += 1
    assert counts[0, 0, 1] == 40 and counts[0, 1].sum() == counts[0, 1, [0, 2]].sum() == 40
    # pooled frequencies of all rows: expected counts vs observed, tolerance 5 sigma
    exp = p * 40
    assert abs(counts.sum() - 2e5) < 1
    z = (counts - exp).sum(axis=(0, 1)) / np.sqrt((exp * (1 - p)).sum(axis=(0, 1)))
    assert np.all(np.abs(z) < 5), z
    s.init_random(123)
    s.sample(dm, probs, "sampled_actions")
    first = dm.pull_data_from_device("sampled_actions")
    s.init_random(123)
    s.sample(dm, probs, "sampled_actions")
    np.testing.assert_array_equal(dm.pull_data_from_device("sampled_actions"), first)


def test_sampler_rejects_nan_on_gpu(toy_gpu):
    from warp_drive.errors import SamplerError
    from warp_drive.services.sampler import Sampler

    dm = toy_gpu.cuda_data_manager
    s = Sampler(toy_gpu.cuda_function_manager)
    s.init_random(0)
    s.register_actions(dm, "sampled_actions", 3)
    bad = torch.full((3, 5, 3), 1 / 3, device="cuda")
    bad[2, 4, 1] = float("nan")
    with pytest.raises(SamplerError, match="env 2, agent 4"):
        s.sample(dm, bad, "sampled_actions")


def test_reset_restores_only_done_envs(toy_gpu):
    dm = toy_gpu.cuda_data_manager
    toy_gpu.reset_all_envs()
    x0 = dm.pull_data_from_device("x")
    toy_gpu.step_all_envs(np.full((3, 5, 1), 2, np.int32))
    np.testing.assert_array_equal(dm.pull_data_from_device("x"), x0 + 1)
    np.testing.assert_array_equal(dm.pull_data_from_device("_timestep_"), [1, 1, 1])
    dm.data_on_device_via_torch("_done_")[2] = 1
    toy_gpu.reset_only_done_envs()
    x = dm.pull_data_from_device("x")
    np.testing.assert_array_equal(x[2], x0[2])
    np.testing.assert_array_equal(x[:2], x0[:2] + 1)
    np.testing.assert_array_equal(dm.pull_data_from_device("_done_"), [0, 0, 0])
    np.testing.assert_array_equal(dm.pull_data_from_device("_timestep_"), [1, 1, 0])


def test_log_controller_on_gpu(tmp_path):
    from tests.cpu.test_env_wrapper_cpu import _LoggedToy
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.services.log_controller import LogController

    w = EnvWrapper(_LoggedToy(num_agents=2, episode_length=3, source_dir=str(tmp_path)), num_envs=2, env_backend="pycuda")
    w.reset_all_envs()
    log = LogController(w.cuda_function_manager)
    log.reset_log(w.cuda_data_manager, env_id=1)
    for t in (1, 2):
        w.step_all_envs(np.full((2, 2, 1), 2, np.int32))
        log.update_log(w.cuda_data_manager, t)
    np.testing.assert_array_equal(log.fetch_log(w.cuda_data_manager)["x_for_log"], [[0.0, 0.5], [1.0, 1.5], [2.0, 2.5]])


def test_reset_pools_match_cpu(tmp_path):
    from tests.cpu.test_env_wrapper_cpu import _PooledToy
    from warp_drive.env.env_wrapper import EnvWrapper

    g = EnvWrapper(_PooledToy(num_agents=3, source_dir=str(tmp_path)), num_envs=64, env_backend="pycuda")
    c = EnvWrapper(_PooledToy(num_agents=3), num_envs=64, env_backend="cpu")
    for w in (g, c):
        w.reset_all_envs()
        w.init_reset_pool(seed=5)
    for _ in range(5):
        g.reset_all_envs()
        c.reset_all_envs()
        gx, cx = g.cuda_data_manager.pull_data_from_device("x"), c.cuda_data_manager.pull_data_from_device("x")
        np.testing.assert_array_equal(gx, cx)
        np.testing.assert_array_equal(g.cuda_data_manager.pull_data_from_device("y"), 10 * gx)


def test_multiblock_env_matches_cpu(tmp_path):
    """A 2500-agent env spanning 3 blocks steps exactly as the NumPy reference."""
    from tests.helpers.toy_env import ToyLine
    from warp_drive.testing.consistency import EnvironmentCPUvsGPU

    class Big(ToyLine):
        def __init__(self, **kw):
            super().__init__(num_agents=2500, episode_length=6, source_dir=str(tmp_path), **kw)

    report = EnvironmentCPUvsGPU(dual_mode_env_class=Big, env_configs={"2500 agents, BPE 3": {}}, num_envs=3, blocks_per_env=3).test_env_reset_and_step(seeds=(0, 1))
    assert report.steps >= 12 and report.episodes_completed >= 2 * 3 * 2


@pytest.mark.parametrize("envs,agents", [(2000, 110), (4, 5000), (1000, 110), (10000, 110)])
def test_large_configs_initialise_sample_and_reset(tmp_path, envs, agents):
    from tests.helpers.toy_env import ToyLine
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.services.sampler import Sampler

    w = EnvWrapper(ToyLine(num_agents=agents, episode_length=5, source_dir=str(tmp_path)), num_envs=envs, env_backend="pycuda")
    w.reset_all_envs()
    dm = w.cuda_data_manager
    s = Sampler(w.cuda_function_manager)
    s.init_random(1)
    s.register_actions(dm, "sampled_actions", 3)
    probs = torch.full((envs, agents, 3), 1 / 3, device="cuda")
    for _ in range(5):
        s.sample(dm, probs, "sampled_actions")
        w.step_all_envs()
        w.reset_only_done_envs()
    torch.cuda.synchronize()
    acts = dm.data_on_device_via_torch("sampled_actions")
    counts = torch.bincount(acts.flatten().long(), minlength=3).cpu().numpy() / acts.numel()
    np.testing.assert_allclose(counts, 1 / 3, atol=0.02)
    assert int(dm.data_on_device_via_torch("_timestep_").max()) == 0  # episode of 5 ended and reset
