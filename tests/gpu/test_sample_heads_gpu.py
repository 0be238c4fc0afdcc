"""``sample_action_heads`` on the pycuda backend: one launch per policy and step.

It must equal, bit for bit, one ``sample_actions`` launch per head plus ``index_copy_`` into the
joint placeholder (actions in both placeholders, joint log-probabilities, counters, error bits),
for row counts that are not a multiple of the block; draw what its NumPy twin draws; and replay
from a CUDA graph what it does eagerly.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.cpu.test_sample_heads import (
    JOINT,
    assert_same_state,
    cpu_backend,
    fused,
    make_case,
    make_heads,
    run_both,
    state,
)

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")


def pycuda_backend(num_agents: int, num_envs: int):
    from warp_drive.managers.pycuda_data_manager import PyCUDADataManager
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    dm = PyCUDADataManager(num_agents=num_agents, num_envs=num_envs, episode_length=2)
    fm = PyCUDAFunctionManager(num_agents, num_envs)
    fm.load_cuda_from_source_code("")
    return dm, fm


# (envs, agents, policy's agents, head sizes): rows 37*3, 300*7 (not multiples of 256), 64*4 = 256
CASES = [
    (37, 11, [10, 0, 4], [5]),
    (37, 11, list(range(11)), [3, 21]),
    (300, 7, [6, 5, 1, 2], [20, 20]),
    (300, 7, [2, 3, 4], [4, 1, 9]),
    (64, 4, [0, 1, 2, 3], [2, 7, 3, 6]),
    (1000, 110, list(range(10, 110)), [20, 20]),  # the Tag tutorial's runners, 1000 envs
]


@pytest.mark.parametrize("E, N, agents, sizes", CASES)
@pytest.mark.parametrize("greedy", [False, True])
def test_kernel_equals_per_head_launches_and_index_copy(E, N, agents, sizes, greedy):
    fused_state, reference = run_both(pycuda_backend, E, N, agents, sizes, greedy=greedy)
    assert_same_state(fused_state, reference)


def test_kernel_flags_an_agent_index_outside_the_joint_placeholder():
    from tests.cpu.test_sample_heads import test_an_agent_index_outside_the_joint_placeholder_is_flagged_not_written as check

    check(backend=pycuda_backend)


def test_kernel_error_bits_equal_per_head_launches():
    fused_state, reference = run_both(pycuda_backend, 33, 9, [8, 0, 3], [3, 4], bad=True, steps=1)
    assert_same_state(fused_state, reference)
    assert fused_state["error_flag"][0] == 3


@pytest.mark.parametrize("E, N, agents, sizes", CASES[:5])
def test_kernel_equals_numpy_twin(E, N, agents, sizes):
    """Same actions, counters and error bits; log-probabilities within the float32 rounding of
    the device's logf."""
    states = []
    for backend in (pycuda_backend, cpu_backend):
        case = make_case(backend, E, N, agents, len(sizes))
        lp = torch.zeros((E, len(agents)), device=case.device)
        for step in range(3):
            heads = make_heads(E, len(agents), sizes, seed=step, device=case.device, bad=step == 2)
            fused(case, heads, False, lp)
        states.append(state(case, lp))
    gpu, cpu = states
    gpu_lp, cpu_lp = (s.pop("log_probs").view(np.float32) for s in (gpu, cpu))
    assert_same_state(gpu, cpu)
    np.testing.assert_allclose(gpu_lp, cpu_lp, rtol=2e-6, atol=1e-6)


def test_kernel_replays_from_a_cuda_graph():
    from warp_drive.training.engine.cuda_graph import GraphedRollout

    E, N, agents, sizes = 300, 7, [6, 5, 1, 2], [20, 3]
    eager, graphed = (make_case(pycuda_backend, E, N, agents, len(sizes)) for _ in range(2))
    heads = make_heads(E, len(agents), sizes, seed=0, device=eager.device)
    lps = [torch.zeros((E, len(agents)), device="cuda") for _ in range(2)]

    def body():
        fused(graphed, heads, False, lps[1])
        return {"lp": lps[1]}

    replay = GraphedRollout(body, graphed.sampler._fm)
    for _ in range(4):  # one eager run, the capture, then replays
        replay()
        fused(eager, heads, False, lps[0])
    torch.cuda.synchronize()
    assert replay.captured
    assert_same_state(state(graphed, lps[1]), state(eager, lps[0]))
    assert all((v == 4).all() for k, v in state(graphed, None).items() if "/" in k)
    assert graphed.dm.pull_data_from_device(JOINT).shape == (E, N, len(sizes))
