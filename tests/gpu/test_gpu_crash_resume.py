"""GPU backend: a stop at a random moment resumes to the uninterrupted state; the main command's output.

The CPU twins are tests/cpu/training/test_crash_resume.py and tests/cpu/test_docs_commands.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
# 12 iterations; the runners' update pinned at 4 epochs x 4 minibatches (16 captured minibatch steps per iteration,
# so k = 20 and 70 land inside an update; the bundled config's 1 runner epoch would end the run at 48)
OVERRIDES = ["trainer.num_envs=50", "trainer.train_batch_size=1000", "trainer.num_episodes=24", "trainer.seed=5",
             "policy.runner.num_epochs=4", "policy.runner.num_minibatches=4",
             "saving.metrics_log_freq=3", "saving.model_params_save_freq=4", "saving.checkpoint_every_seconds=0"]


def _trainer(tmp_path, run):
    from example_envs import get_default_config_path, get_example_env_class
    from warp_drive.config import load_run_config
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.example_training_script import default_policy_map
    from warp_drive.training.trainer import Trainer

    cfg = load_run_config(get_default_config_path("tag_continuous"),
                          ["trainer.env_backend=pycuda", f"saving.basedir={tmp_path}", *OVERRIDES])
    env = get_example_env_class("tag_continuous")(**cfg.env)
    w = EnvWrapper(env, num_envs=cfg.trainer.num_envs, env_backend="pycuda")
    return Trainer(w, cfg, default_policy_map(env, cfg.policy_tags), verbose=False, results_dir=str(tmp_path / run))


def _weights(t):
    out = {f"{tag}/{k}": v.detach().cpu().clone() for tag, p in t.policies.items() for k, v in p.model.state_dict().items()}
    out.update({f"env/{k}": v for k, v in t.env_wrapper.cuda_data_manager.state_dict().items()})
    return out


@pytest.mark.parametrize("k,signum", [(20, signal.SIGINT), (70, signal.SIGTERM)])
def test_signal_in_an_update_then_resume_equals_uninterrupted_on_the_gpu(tmp_path, monkeypatch, k, signum):
    """The rollout and each minibatch step are CUDA graph replays: the signal arrives between the
    runner's k-th and (k+1)-th minibatch step; the trainer finishes the iteration, checkpoints and
    raises."""
    from warp_drive.training.interrupt import TrainingInterrupted

    ref = _trainer(tmp_path, "ref")
    ref.train()
    expected = _weights(ref)
    t = _trainer(tmp_path, "run")
    runner_policy, replay, calls = t.policies["runner"], torch.cuda.CUDAGraph.replay, {"n": 0}

    def counted_replay(graph):
        replay(graph)
        if runner_policy.graphed is not None and graph is runner_policy.graphed.graph:
            calls["n"] += 1
            if calls["n"] == k:
                os.kill(os.getpid(), signum)

    monkeypatch.setattr(torch.cuda.CUDAGraph, "replay", counted_replay)
    with pytest.raises(TrainingInterrupted) as info:
        t.train()
    monkeypatch.undo()
    # the bundled config's runner takes num_epochs x num_minibatches minibatch steps per iteration
    runner = t.config.policy["runner"]
    steps = (runner.num_epochs or 1) * runner.num_minibatches
    stopped = (k - 1) // steps + 1
    assert 1 < stopped < t.num_iters, "pick k so the stop lands mid-run"
    assert info.value.iteration == stopped and info.value.exit_code == 128 + signum
    resumed = _trainer(tmp_path, "run")
    resumed.load_checkpoint(tmp_path / "run")
    assert resumed.iteration == stopped
    resumed.train()
    got = _weights(resumed)
    assert got.keys() == expected.keys()
    for key in got:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0, msg=key)


def test_main_command_on_the_gpu_prints_results_progress_and_summary(tmp_path):
    """README's main command with the bundled GPU config: report its wall time."""
    from example_envs import get_default_config_path
    from warp_drive.config import load_run_config

    cfg = load_run_config(get_default_config_path("tag_continuous"))
    iters = cfg.trainer.num_iterations(cfg.env["episode_length"])
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "tag_continuous",
                          "--results_dir", str(tmp_path / "run")], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))))
    wall = time.perf_counter() - start
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert lines[0] == f"results: {tmp_path / 'run'}"
    assert not any("CPU-sized" in line for line in lines)  # the bundled config, unchanged
    progress = [line for line in lines if line.startswith("iteration ")]
    done = [int(p.split()[1].split("/")[0]) for p in progress]
    assert all(p.split()[1].endswith(f"/{iters}") for p in progress)
    # after the first iteration, then at least every tenth of the run, and after the last
    assert done[0] == 1 and done[-1] == iters and done == sorted(set(done))
    assert max(b - a for a, b in zip(done, done[1:])) <= -(-iters // 10)
    assert any(line.startswith("learning: runner episode return") for line in lines)
    print(f"main command on the GPU: {wall:.1f} s wall ({iters} iterations of {cfg.trainer.train_batch_size} env steps)")
