"""The interop adapters check actions on the pycuda backend (issue 26, item 5): CUDA tensors are
checked on the device, NumPy actions on the host, before the push; clipping needs no host sync and
leaves valid actions bit for bit unchanged."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

import example_envs  # noqa: E402,F401 - registers the example envs by name
from warp_drive.vocab.constants import Constants  # noqa: E402
from warp_drive.errors import InvalidActionError  # noqa: E402

CARTPOLE = dict(episode_length=20, seed=0)
PENDULUM = dict(episode_length=30, seed=0)


def _vec(name, num_envs, config, **kwargs):
    from warp_drive.interop import WarpDriveVectorEnv

    envs = WarpDriveVectorEnv(name, num_envs=num_envs, env_config=config, backend="pycuda", **kwargs)
    envs.reset(seed=0)
    return envs


def test_vector_env_refuses_bad_cuda_and_numpy_actions():
    envs = _vec("cartpole", 64, CARTPOLE)
    before = envs.data_manager.pull_data_from_device(Constants.OBSERVATIONS).copy()
    for bad in (7, -1):
        actions = torch.zeros(64, dtype=torch.long, device="cuda")
        actions[5] = bad
        for given in (actions, actions.cpu().numpy()):
            with pytest.raises(InvalidActionError, match=rf"WarpDriveVectorEnv: 1 of 64 .*sub-env 5: {bad} \(allowed 0..1\)"):
                envs.step(given)
    with pytest.raises(InvalidActionError, match="sub-env 3: 1.5"):
        envs.step(torch.tensor([0.0, 0.0, 0.0, 1.5] + [0.0] * 60, device="cuda"))
    np.testing.assert_array_equal(envs.data_manager.pull_data_from_device(Constants.OBSERVATIONS), before)

    pend = _vec("pendulum", 16, PENDULUM)
    for bad in (float("nan"), float("inf"), 3.0):
        actions = torch.zeros(16, 1, device="cuda")
        actions[2] = bad
        with pytest.raises(InvalidActionError, match=r"sub-env 2: .* \(allowed \[-2, 2\]\)"):
            pend.step(actions)


def test_vector_env_clip_on_the_device_keeps_pendulum_finite():
    envs = _vec("pendulum", 16, PENDULUM, invalid_actions="clip")
    actions = torch.zeros(16, 1, device="cuda")
    actions[:4, 0] = torch.tensor([float("nan"), float("inf"), -float("inf"), 7.0])
    for _ in range(40):
        obs, rewards, *_ = envs.step(actions)
        assert torch.isfinite(obs).all() and torch.isfinite(rewards).all()
    stored = envs.data_manager.data_on_device_via_torch(Constants.ACTIONS)[:4, 0, 0].cpu().tolist()
    assert stored == [0.0, 2.0, -2.0, 2.0]


def test_valid_cuda_actions_are_pushed_bit_for_bit():
    gen = torch.Generator(device="cuda").manual_seed(0)
    actions = [(torch.randn(32, 1, device="cuda", generator=gen) * 1.5).clamp(-2, 2) for _ in range(45)]
    runs = []
    for mode in ("raise", "clip", None):
        envs = _vec("pendulum", 32, PENDULUM, **({} if mode is None else {"invalid_actions": mode}))
        target = envs.data_manager.data_on_device_via_torch(Constants.ACTIONS)
        trace = []
        for a in actions:
            if mode is None:  # the raw push, as before the check existed
                target.copy_(a.reshape(target.shape))
                envs.wrapper.step_all_envs()
                rewards = envs.data_manager.data_on_device_via_torch(Constants.REWARDS).clone()
                envs.wrapper.reset_only_done_envs()
                obs = envs.data_manager.data_on_device_via_torch(Constants.OBSERVATIONS)[:, 0].clone()
            else:
                obs, rewards, *_ = envs.step(a)
                obs, rewards = obs.clone(), rewards.clone()
            trace.append((obs.cpu(), rewards.reshape(-1).cpu()))
        runs.append(trace)
    for trace in runs[1:]:
        for (o, r), (o0, r0) in zip(trace, runs[0]):
            assert torch.equal(o, o0) and torch.equal(r, r0)


def test_pettingzoo_pycuda_refuses_and_clips():
    from warp_drive.interop import WarpDrivePettingZooEnv

    env = WarpDrivePettingZooEnv("tag_gridworld", dict(num_taggers=2, episode_length=10), backend="pycuda")
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=r"agent_1: 7 \(allowed 0..4\)"):
        env.step({a: (7 if a == "agent_1" else 0) for a in env.agents})
    clip = WarpDrivePettingZooEnv("pendulum", PENDULUM, backend="pycuda", invalid_actions="clip")
    clip.reset(seed=0)
    obs, rewards, *_ = clip.step({"agent_0": np.array([np.nan])})
    assert np.isfinite(rewards["agent_0"]) and np.isfinite(obs["agent_0"]).all()
