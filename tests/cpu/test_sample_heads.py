"""``Sampler.sample_heads``: every categorical head (and the joint placeholder copy) in one launch.

On the cpu backend (the NumPy twin of the ``sample_action_heads`` kernel) it must give, bit for
bit, what one ``Sampler.sample`` per head followed by ``index_copy_`` into the joint placeholder
gives: the actions in both placeholders, the joint log-probabilities, the call counters and the
error bits. ``tests/gpu/test_sample_heads_gpu.py`` runs the same cases on the pycuda backend, and
``test_sample_heads_host_matches_numpy`` (below) checks the kernel's per-row CUDA function
(``wkSampleHeadsRow``, compiled for the host by nvcc) against the twin.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from warp_drive.errors import DataShapeError, DataTypeError, SamplerError
from warp_drive.managers import cpu_kernels
from warp_drive.services.sampler import MAX_SAMPLE_HEADS, Sampler, stream_id

JOINT = "sampled_actions"
OWN = "sampled_actions_p"


@dataclass
class Case:
    """One sampler on one data manager with a joint placeholder (E, N, H) and, for a policy of a
    subset of agents, a placeholder of its own (E, A, H)."""

    dm: Any
    sampler: Sampler
    name: str  # the placeholder sampled into
    agent_index: torch.Tensor
    device: torch.device


def cpu_backend(num_agents: int, num_envs: int) -> tuple[Any, Any]:
    from warp_drive.managers.data_manager import CPUDataManager
    from warp_drive.managers.function_manager import CPUFunctionManager

    dm = CPUDataManager(num_agents=num_agents, num_envs=num_envs, episode_length=2)
    return dm, CPUFunctionManager(num_agents, num_envs)


def make_case(backend: Callable[[int, int], tuple[Any, Any]], E: int, N: int, agents: list[int], num_heads: int,
              seed: int = 7, two_d: bool = False) -> Case:
    """A seeded sampler; placeholders pre-filled with the same arbitrary values for every call."""
    dm, fm = backend(N, E)
    rng = np.random.default_rng(1000 + E)
    joint = rng.integers(0, 50, size=(E, N) if two_d else (E, N, num_heads)).astype(np.int32)
    dm.push_data_to_device({JOINT: joint}, torch_accessible=True)
    name = JOINT
    if agents != list(range(N)):
        own = rng.integers(0, 50, size=(E, len(agents)) if two_d else (E, len(agents), num_heads)).astype(np.int32)
        dm.push_data_to_device({OWN: own}, torch_accessible=True)
        name = OWN
    sampler = Sampler(fm)
    sampler.init_random(seed)
    sampler.register_actions(dm, name, 9)
    device = dm.data_on_device_via_torch(JOINT).device
    return Case(dm, sampler, name, torch.tensor(agents, dtype=torch.int64, device=device), device)


def make_heads(E: int, A: int, sizes: list[int], seed: int, device: torch.device, bad: bool = False,
               zeros: bool = True) -> list[torch.Tensor]:
    """Probabilities per head (a degenerate row; ``zeros``: zeroed entries, so that some rows do not
    sum to 1); ``bad``: a NaN and an unnormalised row in the last head too."""
    rng = np.random.default_rng(seed)
    heads = []
    for h, n in enumerate(sizes):
        p = rng.dirichlet(np.full(n, 0.7), size=(E, A)).astype(np.float32)
        if zeros:
            p[rng.random((E, A, n)) < 0.15] = 0.0
        p[0, 0] = 0.0
        p[0, 0, n - 1] = 1.0  # degenerate row
        if bad and h == len(sizes) - 1:
            p[E - 1, A - 1, 0] = np.nan
            p[E - 1, 0] *= 3.0
        heads.append(torch.from_numpy(p).to(device))
    return heads


def per_head_reference(case: Case, heads: list[torch.Tensor], greedy: bool, log_probs: torch.Tensor | None) -> None:
    """What ``Rollout.sample`` did before ``sample_heads``: one launch per head, then index_copy_."""
    for h, probs in enumerate(heads):
        case.sampler.sample(case.dm, probs, case.name, use_argmax=greedy, head=h, check=False, log_probs=log_probs,
                            accumulate_log_probs=h > 0)
    if case.name != JOINT:
        actions = case.dm.data_on_device_via_torch(case.name)
        case.dm.data_on_device_via_torch(JOINT).index_copy_(1, case.agent_index, actions)


def fused(case: Case, heads: list[torch.Tensor], greedy: bool, log_probs: torch.Tensor | None) -> None:
    joint = (JOINT, case.agent_index) if case.name != JOINT else None
    case.sampler.sample_heads(case.dm, heads, case.name, use_argmax=greedy, log_probs=log_probs, joint=joint)


def state(case: Case, log_probs: torch.Tensor | None) -> dict[str, np.ndarray]:
    """Both placeholders, the log-probabilities' bits, every counter and the error flag."""
    out = {JOINT: case.dm.pull_data_from_device(JOINT), case.name: case.dm.pull_data_from_device(case.name)}
    if log_probs is not None:
        out["log_probs"] = log_probs.cpu().numpy().view(np.int32).copy()
    out.update({k: v.cpu().numpy() for k, v in case.sampler.counters_state().items()})
    out["error_flag"] = case.sampler._error_flag.cpu().numpy().copy()
    return out


def assert_same_state(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def run_both(backend: Callable[[int, int], tuple[Any, Any]], E: int, N: int, agents: list[int], sizes: list[int],
             greedy: bool = False, with_log_probs: bool = True, two_d: bool = False, bad: bool = False,
             steps: int = 3) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Several steps of the fused call and of the per-head reference on twin setups; their states."""
    states = []
    for sample in (fused, per_head_reference):
        case = make_case(backend, E, N, agents, len(sizes), two_d=two_d)
        A = len(agents)
        lp = torch.full((E, A), 123.0, device=case.device) if with_log_probs else None
        for step in range(steps):
            sample(case, make_heads(E, A, sizes, seed=step, device=case.device, bad=bad), greedy, lp)
        states.append(state(case, lp))
    return states[0], states[1]


# --------------------------------------------------------------------------- equality with the per-head path


@pytest.mark.parametrize("sizes", [[5], [3, 21], [4, 1, 9], [2, 7, 3, 6]])
@pytest.mark.parametrize("agents", [[0, 1, 2, 3, 4], [4, 1], [0, 2, 3]])
def test_sample_heads_equals_per_head_samples_and_index_copy(sizes, agents):
    fused_state, reference = run_both(cpu_backend, 7, 5, agents, sizes)
    assert_same_state(fused_state, reference)
    counters = {k: v for k, v in fused_state.items() if "/" in k}
    assert len(counters) == len(sizes) and all((v == 3).all() for v in counters.values())  # 3 draws each


@pytest.mark.parametrize("agents", [[0, 1, 2], [2, 0]])
def test_argmax_mode_draws_nothing_and_matches(agents):
    fused_state, reference = run_both(cpu_backend, 4, 3, agents, [6, 2, 5], greedy=True)
    assert_same_state(fused_state, reference)
    assert all((v == 0).all() for k, v in fused_state.items() if "/" in k)


def test_without_log_probs_and_one_head_placeholder_of_two_dims():
    assert_same_state(*run_both(cpu_backend, 5, 4, [3, 0], [7], with_log_probs=False, two_d=True))
    assert_same_state(*run_both(cpu_backend, 5, 4, [0, 1, 2, 3], [7], two_d=True))


def test_bad_probabilities_raise_the_same_error_bits():
    fused_state, reference = run_both(cpu_backend, 3, 4, [1, 3], [3, 4], bad=True, steps=1)
    assert_same_state(fused_state, reference)
    assert fused_state["error_flag"][0] == cpu_kernels.ERROR_BAD_VALUE | cpu_kernels.ERROR_BAD_SUM


def test_other_agents_of_the_joint_placeholder_are_untouched():
    case = make_case(cpu_backend, 3, 6, [5, 1], 2)
    before = case.dm.pull_data_from_device(JOINT)
    fused(case, make_heads(3, 2, [4, 4], 0, case.device), False, None)
    after = case.dm.pull_data_from_device(JOINT)
    others = [0, 2, 3, 4]
    np.testing.assert_array_equal(after[:, others], before[:, others])
    np.testing.assert_array_equal(after[:, [5, 1]], case.dm.pull_data_from_device(OWN))


def test_check_names_the_bad_head():
    case = make_case(cpu_backend, 3, 4, [1, 3], 2)
    heads = make_heads(3, 2, [3, 4], 0, case.device, bad=True, zeros=False)
    with pytest.raises(SamplerError, match=r"head 1, env 2, agent 0"):
        case.sampler.sample_heads(case.dm, heads, OWN, check=True, joint=(JOINT, case.agent_index))


def test_an_agent_index_outside_the_joint_placeholder_is_flagged_not_written(backend=cpu_backend):
    case = make_case(backend, 3, 4, [1, 3], 2)
    before = case.dm.pull_data_from_device(JOINT)
    bad_index = torch.tensor([1, 4], dtype=torch.int64, device=case.device)  # 4 agents: 4 is out of range
    heads = make_heads(3, 2, [3, 4], 0, case.device)
    with pytest.raises(SamplerError, match="agent index outside the joint placeholder"):
        case.sampler.sample_heads(case.dm, heads, OWN, check=True, joint=(JOINT, bad_index))
    after = case.dm.pull_data_from_device(JOINT)
    np.testing.assert_array_equal(after[:, [0, 2, 3]], before[:, [0, 2, 3]])
    np.testing.assert_array_equal(after[:, 1], case.dm.pull_data_from_device(OWN)[:, 0])


def test_twin_draws_the_documented_philox_numbers():
    """Head h of row r takes word 0 of Philox(key=(seed, stream(name, h)), ctr=(r, calls, 0, 0))."""
    case = make_case(cpu_backend, 2, 3, [0, 1, 2], 2, seed=99)
    heads = make_heads(2, 3, [4, 6], 5, case.device)
    fused(case, heads, False, None)
    got = case.dm.pull_data_from_device(JOINT)
    for h, probs in enumerate(heads):
        want = np.zeros(6, np.int32)
        cpu_kernels.sample_actions(probs.numpy().copy(), want, np.zeros(6, np.uint32), np.zeros(1, np.int32), None,
                                   6, probs.shape[2], 1, 0, 99, stream_id(JOINT, h), 0)
        np.testing.assert_array_equal(got[..., h].reshape(-1), want)


# --------------------------------------------------------------------------- the fused path in the rollout


def test_fits_heads_says_when_the_fused_launch_applies():
    case = make_case(cpu_backend, 2, 4, [1, 2], 3)
    s, dm = case.sampler, case.dm
    assert s.fits_heads(dm, OWN, 3) and s.fits_heads(dm, OWN, 3, JOINT)
    assert not s.fits_heads(dm, OWN, 2)  # fewer heads than columns: one at a time
    assert not s.fits_heads(dm, JOINT, 3)  # not registered
    dm.push_data_to_device({"wide": np.zeros((2, 4, MAX_SAMPLE_HEADS + 1), np.int32),
                            "floats": np.zeros((2, 2, 3), np.float32)}, torch_accessible=True)
    s.register_actions(dm, "wide", 3)
    assert not s.fits_heads(dm, "wide", MAX_SAMPLE_HEADS + 1)
    assert not s.fits_heads(dm, OWN, 3, "floats")


def test_a_module_without_the_kernel_samples_heads_one_at_a_time(monkeypatch):
    monkeypatch.delitem(cpu_kernels.CORE_KERNELS, "sample_action_heads")
    case = make_case(cpu_backend, 2, 4, [1, 2], 2)
    assert not case.sampler.fits_heads(case.dm, OWN, 2, JOINT)
    per_head_reference(case, make_heads(2, 2, [3, 3], 0, case.device), False, None)  # still samples


# --------------------------------------------------------------------------- errors


def test_bad_input_gets_typed_errors():
    case = make_case(cpu_backend, 2, 4, [1, 2], 2)
    s, dm, idx = case.sampler, case.dm, case.agent_index
    heads = make_heads(2, 2, [3, 3], 0, case.device)
    with pytest.raises(DataShapeError, match=f"1 to {MAX_SAMPLE_HEADS}"):
        s.sample_heads(dm, heads * 3, OWN)
    with pytest.raises(DataShapeError, match=f"1 to {MAX_SAMPLE_HEADS}"):
        s.sample_heads(dm, [], OWN)
    with pytest.raises(DataShapeError, match="2 columns"):
        s.sample_heads(dm, heads[:1], OWN)
    with pytest.raises(DataShapeError, match="expected \\(num_envs=2, num_agents=2, n\\)"):
        s.sample_heads(dm, [heads[0], heads[1][:, :1]], OWN)
    with pytest.raises(DataTypeError, match="float64"):
        s.sample_heads(dm, [heads[0], heads[1].double()], OWN)
    with pytest.raises(DataTypeError, match="torch tensor"):
        s.sample_heads(dm, [heads[0], heads[1].numpy()], OWN)
    with pytest.raises(DataShapeError, match="no actions"):
        s.sample_heads(dm, [heads[0], heads[1][..., :0]], OWN)
    with pytest.raises(DataShapeError, match="log_probs"):
        s.sample_heads(dm, heads, OWN, log_probs=torch.zeros(2, 3))
    with pytest.raises(DataTypeError, match="agent_index must be an int64 tensor of shape \\(2,\\)"):
        s.sample_heads(dm, heads, OWN, joint=(JOINT, idx.int()))
    with pytest.raises(DataTypeError, match="agent_index"):
        s.sample_heads(dm, heads, OWN, joint=(JOINT, [1, 2]))
    with pytest.raises(DataTypeError, match="joint must be"):
        s.sample_heads(dm, heads, OWN, joint=JOINT)
    with pytest.raises(DataShapeError, match="itself"):
        s.sample_heads(dm, heads, OWN, joint=(OWN, idx))
    dm.push_data_to_device({"three": np.zeros((2, 4, 3), np.int32)}, torch_accessible=True)
    with pytest.raises(DataShapeError, match="joint placeholder 'three'"):
        s.sample_heads(dm, heads, OWN, joint=("three", idx))
    with pytest.raises(SamplerError, match="register_actions"):
        s.sample_heads(dm, heads, "three")
    fresh = Sampler(s._fm)
    fresh.register_actions(dm, OWN, 3)
    with pytest.raises(SamplerError, match="init_random"):
        fresh.sample_heads(dm, heads, OWN)
    assert not any(k[0] == OWN for k in fresh._counters)  # nothing drawn by the failed calls


def test_twin_rejects_a_head_count_beyond_the_kernel():
    with pytest.raises(DataShapeError, match="num_heads=5"):
        cpu_kernels.sample_action_heads(*[None] * 8, *[0] * 8, np.zeros(1, np.int32), np.zeros(1, np.int32), None,
                                        None, None, 1, 5, 1, 1, 0, 0)


# --------------------------------------------------------------------------- the CUDA row function on the host

CORE_DIR = Path(__file__).resolve().parents[2] / "warp_drive" / "cuda" / "core"
NVCC = shutil.which("nvcc")

# Reads "R H seed argmax", then H lines "n stream", then per head R counters and R*n probability
# bits; prints per row "errors lp_bits a_0 .. a_{H-1}".
HOST_PROGRAM = r"""
#include "sampler.cuh"
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  int rows, heads, argmax; unsigned int seed;
  if (std::scanf("%d %d %u %d", &rows, &heads, &seed, &argmax) != 4) return 1;
  int n[WK_MAX_SAMPLE_HEADS] = {0, 0, 0, 0};
  unsigned int streams[WK_MAX_SAMPLE_HEADS] = {0u, 0u, 0u, 0u};
  for (int h = 0; h < heads; ++h) std::scanf("%d %u", &n[h], &streams[h]);
  std::vector<unsigned int> counters[WK_MAX_SAMPLE_HEADS];
  std::vector<float> probs[WK_MAX_SAMPLE_HEADS];
  for (int h = 0; h < heads; ++h) {
    counters[h].resize(rows);
    for (int r = 0; r < rows; ++r) std::scanf("%u", &counters[h][r]);
    probs[h].resize(rows * n[h]);
    for (int i = 0; i < rows * n[h]; ++i) {
      unsigned int b; std::scanf("%u", &b); std::memcpy(&probs[h][i], &b, 4);
    }
  }
  for (int r = 0; r < rows; ++r) {
    const float* p[WK_MAX_SAMPLE_HEADS] = {nullptr, nullptr, nullptr, nullptr};
    unsigned int calls[WK_MAX_SAMPLE_HEADS] = {0u, 0u, 0u, 0u};
    for (int h = 0; h < heads; ++h) { p[h] = probs[h].data() + r * n[h]; calls[h] = counters[h][r]; }
    int actions[WK_MAX_SAMPLE_HEADS];
    float lp = 0.0f;
    const int errors = wkSampleHeadsRow(p, n, calls, streams, heads, r, seed, argmax, actions, 1, &lp);
    unsigned int lp_bits; std::memcpy(&lp_bits, &lp, 4);
    std::printf("%d %u", errors, lp_bits);
    for (int h = 0; h < heads; ++h) std::printf(" %d", actions[h]);
    std::printf("\n");
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def host_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if NVCC is None:
        pytest.skip("nvcc not on PATH")
    work = tmp_path_factory.mktemp("sample_heads_host")
    (work / "driver.cu").write_text(HOST_PROGRAM)
    exe = work / "driver"
    subprocess.run([NVCC, "-O2", "-std=c++17", f"-I{CORE_DIR}", "-o", str(exe), str(work / "driver.cu")], check=True,
                   capture_output=True, timeout=600)
    return exe


@pytest.mark.parametrize("sizes, argmax", [([6], 0), ([3, 11], 0), ([4, 1, 9], 0), ([2, 7, 3, 6], 0), ([5, 8], 1)])
def test_sample_heads_host_matches_numpy(host_binary: Path, sizes: list[int], argmax: int) -> None:
    rows, seed = 300, 0xC0FFEE
    rng = np.random.default_rng(len(sizes) + 10 * argmax)
    heads = make_heads(rows, 1, sizes, seed=len(sizes), device=torch.device("cpu"), bad=True)
    probs = [h.numpy().reshape(rows, -1).copy() for h in heads]
    counters = [rng.integers(0, 2**32, size=rows, dtype=np.uint64).astype(np.uint32) for _ in sizes]
    streams = [stream_id("host", h) for h in range(len(sizes))]
    lines = [f"{rows} {len(sizes)} {seed} {argmax}", *[f"{n} {s}" for n, s in zip(sizes, streams)]]
    for c, p in zip(counters, probs):
        lines += [" ".join(map(str, c)), " ".join(map(str, p.view(np.uint32).reshape(-1)))]
    text = subprocess.run([str(host_binary)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          check=True, timeout=120).stdout
    got = np.array([line.split() for line in text.splitlines()], dtype=np.int64)

    H = len(sizes)
    actions = np.zeros((rows, H), np.int32)
    lp = np.zeros(rows, np.float32)
    flag = np.zeros(1, np.int32)
    pad = MAX_SAMPLE_HEADS - H
    cpu_kernels.sample_action_heads(*probs, *[None] * pad, *[c.copy() for c in counters], *[None] * pad,
                                    *sizes, *[0] * pad, *streams, *[0] * pad, actions, flag, lp, None, None,
                                    rows, H, 1, 1, seed, argmax)
    np.testing.assert_array_equal(got[:, 2:], actions)
    assert int(np.bitwise_or.reduce(got[:, 0])) == int(flag[0]) == 3
    host_lp = got[:, 1].astype(np.uint32).view(np.float32)
    np.testing.assert_allclose(host_lp, lp, rtol=2e-6, atol=1e-6)  # host logf vs NumPy log: float32 rounding


def test_sampler_error_bits_match_the_cuda_defines():
    """One set of error bits and head limit: the NumPy twins' constants equal sampler.cuh's #defines."""
    import re
    from pathlib import Path

    from warp_drive.managers import cpu_kernels

    text = (Path(cpu_kernels.__file__).parents[1] / "cuda" / "core" / "sampler.cuh").read_text()
    defines = {m[0]: int(m[1]) for m in re.findall(r"#define WK_(ERROR_BAD_\w+|MAX_SAMPLE_HEADS) (\d+)", text)}
    assert defines == {"ERROR_BAD_VALUE": cpu_kernels.ERROR_BAD_VALUE, "ERROR_BAD_SUM": cpu_kernels.ERROR_BAD_SUM,
                       "ERROR_BAD_INDEX": cpu_kernels.ERROR_BAD_INDEX, "MAX_SAMPLE_HEADS": cpu_kernels.MAX_SAMPLE_HEADS}
