"""Failure handling on the pycuda backend (issue 26 items 3, 4 and 8), the GPU twins of the cpu tests:

- SIGINT / SIGTERM to the main script: exit 130 / 143, a checkpoint that resumes, metric rows once each
  (tests/cpu/training/test_example_script.py, test_crash_resume.py);
- SIGINT to the Lightning CLI: exit 130 with last.ckpt; with a CUDA-graph rollout the stop comes at the
  end of the iteration in progress, never inside it (tests/cpu/training/test_lightning_stop_inside.py);
- a NaN written into the GPU data store's rewards: exit 5 naming the array, the checkpoint before it
  intact and finite (tests/cpu/training/test_nonfinite.py, test_run_failures.py);
- a tampered or emptied kernel-cache entry built by the real nvcc is rebuilt, and the rebuilt module
  runs (tests/cpu/test_kernel_cache_permissions.py);
- a real failing driver call (a launch above the device's threads per block) in training: exit 6 with
  the short CUDA/device message (tests/cpu/training/test_run_failures.py).

Tiny cartpole / Tag configs: the whole file takes well under two minutes on one GPU.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cpu.training.test_example_script import _env
from tests.cpu.training.test_run_failures import RUN, _check_report, _main

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

# test_run_failures' run (cartpole, 4 envs x 50 steps, 4 iterations, a checkpoint after each) on the GPU
GPU_RUN = ["pycuda" if arg == "cpu" else arg for arg in RUN]
SCRIPT = [sys.executable, "-m", "warp_drive.training.example_training_script"]
ENDLESS = ["trainer.num_episodes=1000000", "saving.metrics_log_freq=1"]


def _signal_when(cmd: list[str], ready, signum: int, cwd: Path) -> tuple[int, str]:
    """Starts ``cmd``, sends ``signum`` once ``ready()`` holds; returns (exit code, stdout and stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "training did not start"
            time.sleep(0.05)
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out


def _rows(run: Path) -> list[int]:
    from warp_drive.training.run.metrics import read_metrics

    return [r["iteration"] for r in read_metrics(run / "metrics.jsonl")]


def _finite_weights(state: dict) -> bool:
    """A trainer checkpoint's policy weights: some, and all finite."""
    weights = [v for p in state["policies"].values() for v in p["model"].values()
               if torch.is_tensor(v) and v.is_floating_point()]
    return bool(weights) and all(bool(torch.isfinite(w).all()) for w in weights)


def test_main_script_sigint_then_sigterm_on_the_gpu_checkpoint_resume_and_exit_codes(tmp_path):
    """SIGINT mid-run: exit 130 after the iteration in progress (a CUDA-graph replay is not interrupted)
    with a checkpoint; ``--resume`` continues from it in the same folder, and SIGTERM stops that run
    with 143; the metric rows hold each iteration once, up to the newest checkpoint."""
    from warp_drive.training.run import checkpoint as ckpt
    from warp_drive.training.example_training_script import PROG

    run = tmp_path / "run"
    rc, out = _signal_when([*SCRIPT, *GPU_RUN, *ENDLESS, "--results_dir", str(run)],
                           lambda: (run / "metrics.jsonl").is_file(), signal.SIGINT, tmp_path)
    assert rc == 130, out[-3000:]
    assert "SIGINT: stopped after iteration" in out and "Traceback" not in out, out[-3000:]
    _, state = ckpt.resolve_checkpoint(run)
    stopped = int(state["iteration"])
    assert stopped >= 1 and f"SIGINT: stopped after iteration {stopped}; checkpoint " in out
    assert f"continue with: {PROG} --resume {run}" in out
    assert _rows(run)[-1] == stopped  # metric rows and checkpoint agree (log freq 1)

    def resumed_and_trained() -> bool:
        return len((run / "metrics.jsonl").read_text().splitlines()) > stopped + 1

    rc, out = _signal_when([*SCRIPT, *GPU_RUN, *ENDLESS, "--resume", str(run)], resumed_and_trained, signal.SIGTERM,
                           tmp_path)
    assert rc == 143, out[-3000:]
    assert f"resumed from {run / ckpt.LATEST} at iteration {stopped}" in out, out[-3000:]
    assert "SIGTERM: stopped after iteration" in out and "Traceback" not in out, out[-3000:]
    _, state = ckpt.resolve_checkpoint(run)
    last = int(state["iteration"])
    assert last > stopped + 1 and f"SIGTERM: stopped after iteration {last}; checkpoint " in out
    assert _rows(run) == list(range(1, last + 1))  # appended in the same folder, no duplicates, none missing
    assert _finite_weights(state)


def test_lightning_cli_sigint_on_the_gpu_stops_after_the_iteration_in_progress(tmp_path, monkeypatch, capsys, caplog):
    """Iterations count as slow here (threshold 0 s), which on the cpu backend lets a stop end the
    iteration inside (test_lightning_stop_inside.py). With the GPU's CUDA-graph rollout
    (``long_runs.stops_inside`` is False) a SIGINT sent inside iteration 2 lets it finish:
    exit 130, "stopped after iteration 2" with nothing discarded, and last.ckpt holds the weights of
    the end of iteration 2; the checkpoint resumes."""
    pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")
    import warp_drive.training.run.long_runs as long_runs
    from tests.cpu.training.test_lightning_cli_runs import TINY_TAG
    from warp_drive.training.lightning import cli_runs
    from warp_drive.cli import lightning_train as cli
    from warp_drive.training.lightning.module import WarpDriveModuleBase

    monkeypatch.setattr(long_runs, "SLOW_ITERATION_S", 0.0)
    real_step = WarpDriveModuleBase.training_step
    seen: dict = {}

    def training_step(self, batch, batch_idx):
        if self.engine.iteration == 1 and "graphed" not in seen:  # the second iteration begins
            seen["graphed"] = self.engine.graphed_rollout is not None
            seen["inside"] = long_runs.stops_inside(1.0, 1, self.engine)  # slow (threshold 0 s), one process
            os.kill(os.getpid(), signal.SIGINT)
        result = real_step(self, batch, batch_idx)
        if self.engine.iteration == 2:
            seen["weights"] = {k: v.detach().cpu().clone() for k, v in self.state_dict().items()}
        return result

    monkeypatch.setattr(WarpDriveModuleBase, "training_step", training_step)
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    base = ["--env", "tag_continuous", "--backend", "pycuda", "--quiet", "--iterations-per-epoch", "3", *TINY_TAG,
            "--results-dir", str(runs)]
    with caplog.at_level(logging.WARNING):
        rc = cli.main([*base, "--max-epochs", "4"])
    out = capsys.readouterr().out
    assert rc == 130, out[-3000:]
    assert seen["graphed"] and not seen["inside"], seen
    assert "SIGINT received: stopping after this iteration and writing last.ckpt" in caplog.text
    last = next(runs.rglob("last.ckpt"))
    assert f"SIGINT: stopped after iteration 2; checkpoint {last}" in out and "discarded" not in out, out[-3000:]
    assert f"--resume {last}" in out
    assert cli_runs.checkpoint_iteration(last) == 2
    saved = torch.load(last, map_location="cpu", weights_only=True)["state_dict"]
    assert saved.keys() == seen["weights"].keys()
    for key, value in seen["weights"].items():
        assert torch.equal(saved[key], value), key
    monkeypatch.setattr(WarpDriveModuleBase, "training_step", real_step)
    assert cli.main([*base, "--max-epochs", "2", "--resume", str(last), "--summary"]) == 0
    assert json.loads((runs / "rank0_summary.json").read_text())["iteration"] > 2


def _poison_rewards(monkeypatch, at_step: int, env: int, agent: int, value: float = math.nan) -> None:
    """After the ``at_step``-th env step (counted from 1), the GPU data store's rewards of (env, agent)
    hold ``value`` (as PoisonedLine of test_nonfinite.py does on the cpu backend). The step counter and
    the write are device ops on the capturing stream, so the CUDA-graph replays poison the same step."""
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.utils.constants import Constants

    real = EnvWrapper.step_all_envs
    counters: dict[int, torch.Tensor] = {}

    def step_all_envs(self, actions=None):
        out = real(self, actions)
        rewards = self.cuda_data_manager.data_on_device_via_torch(Constants.REWARDS)
        assert rewards.is_cuda
        n = counters.get(id(self))
        if n is None:  # the first step (iteration 1 runs eagerly, before the graph capture)
            n = counters[id(self)] = torch.zeros((), dtype=torch.int32, device=rewards.device)
        n.add_(1)
        rewards[env, agent].masked_fill_(n == at_step, value)
        return out

    monkeypatch.setattr(EnvWrapper, "step_all_envs", step_all_envs)


def test_nan_reward_in_the_gpu_data_store_stops_with_exit_5_and_a_finite_checkpoint(tmp_path, monkeypatch, capsys):
    """A NaN written into the device rewards at the 3rd step of iteration 3 (50 steps per iteration) stops
    training at the end of iteration 3 with exit 5 and the message naming the rewards, the rollout
    step, env and agent; the newest checkpoint is iteration 2's and its weights are finite."""
    from warp_drive.training.run import checkpoint as ckpt
    from warp_drive.training.run import run_failures as rf

    _poison_rewards(monkeypatch, at_step=2 * 50 + 3, env=2, agent=0)
    run = tmp_path / "run"
    rc, _, err = _main([*GPU_RUN, "--results_dir", str(run)], capsys)
    lines = _check_report(run, rc, err, rf.EXIT_NONFINITE,
                          "training stopped at iteration 3, before its checkpoint: the rewards hold nan at rollout "
                          "step 2, env 2, agent 0", 2)
    assert "the env produced it" in lines[0]
    _, state = ckpt.resolve_checkpoint(run)
    assert int(state["iteration"]) == 2 and not (run / "checkpoint_00000003.pt").exists()
    assert _finite_weights(state)


ADD_IDS = ('extern "C" __global__ void add_ids(float* v) { const int e = wkEnvId(), a = wkAgentId();'
           " if (a < wkNumberAgents) v[e * wkNumberAgents + a] += SCALE.0f * e + a; }")


def _build_and_run(scale: int) -> tuple[Path, bool, list]:
    """Builds ADD_IDS (3 envs x 4 agents) through the kernel cache, loads it and runs it on ones;
    returns (the cache entry, whether nvcc ran, the result)."""
    from warp_drive.cuda import compiler
    from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager

    fm = PyCUDAFunctionManager(num_agents=4, num_envs=3)
    entry = fm.load_cuda_from_source_code(ADD_IDS.replace("SCALE", str(scale)))
    compiled = compiler.last_build_compiled
    fm.initialize_functions(["add_ids"])
    v = torch.ones((3, 4), dtype=torch.float32, device="cuda")
    fm.launch("add_ids", [v])
    return entry, compiled, v.cpu().tolist()


def test_tampered_or_emptied_kernel_cache_entry_is_rebuilt_by_nvcc_and_runs(tmp_path, monkeypatch, caplog):
    """A real cubin in a private cache; its bytes replaced by another valid cubin (a kernel computing
    something else under the same name), then emptied: each time the entry is not served (warning),
    nvcc rebuilds it, the rebuilt module loads and computes the right values, and then it is a hit."""
    from warp_drive.cuda.cache_digest import digest_path, entry_intact

    monkeypatch.setenv("WARP_DRIVE_CACHE_DIR", str(tmp_path / "cache"))
    expected = [[1.0 + 10.0 * e + a for a in range(4)] for e in range(3)]
    entry, compiled, got = _build_and_run(10)
    assert compiled and got == expected and entry.parent == tmp_path / "cache" and digest_path(entry).is_file()
    planted, compiled, other = _build_and_run(-7)  # another valid cubin for the same kernel name
    assert compiled and planted != entry and other != expected
    for damage in ("another cubin", "zero bytes"):
        entry.write_bytes(planted.read_bytes() if damage == "another cubin" else b"")  # same owner and mode
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            again, compiled, got = _build_and_run(10)
        assert again == entry and compiled, damage
        assert "does not match the SHA-256 recorded" in caplog.text and "it is rebuilt" in caplog.text, damage
        assert got == expected, damage  # the rebuilt module, not the planted one
        assert entry.stat().st_size > 0 and entry.read_bytes() != planted.read_bytes() and entry_intact(entry)
        assert _build_and_run(10)[1:] == (False, expected)  # the rebuilt entry is a trusted hit


# The main script with every kernel launch after iteration 2's checkpoint given 4096 threads per block
# (above every GPU's 1024): cuLaunchKernel fails in the driver (pycuda LogicError, not sticky). The rollout
# runs eagerly (no CUDA graph: its replays make no Python launches).
LAUNCH_FAILS_AFTER_ITERATION_2 = """
import sys
from warp_drive.managers.pycuda_function_manager import PyCUDAFunctionManager
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training import example_training_script as script

written, real_write, real_launch = [], ckpt.write_checkpoint, PyCUDAFunctionManager.launch

def write_checkpoint(path, save_dir, state, policy_files):
    out = real_write(path, save_dir, state, policy_files)
    written.append(int(state["iteration"]))
    return out

def launch(self, name, args, grid=None, block=None):
    return real_launch(self, name, args, grid, (4096, 1, 1) if max(written, default=0) >= 2 else block)

ckpt.write_checkpoint, PyCUDAFunctionManager.launch = write_checkpoint, launch
sys.exit(script.main(sys.argv[1:]))
"""


def test_a_failing_driver_call_in_training_exits_6_with_the_short_device_message(tmp_path):
    """In a subprocess (its context is its own): exit 6, "error: CUDA/device error: cuLaunchKernel failed ...",
    no traceback on stderr (it is in error.log), and the intact checkpoint (iteration 2) named for --resume."""
    from warp_drive.training.run import run_failures as rf

    run = tmp_path / "run"
    res = subprocess.run([sys.executable, "-c", LAUNCH_FAILS_AFTER_ITERATION_2, *GPU_RUN, "trainer.use_cuda_graph=false",
                          "--results_dir", str(run)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=300)
    lines = _check_report(run, res.returncode, res.stderr, rf.EXIT_DEVICE, "CUDA/device error: cuLaunchKernel failed", 2)
    assert lines[0].startswith("error: CUDA/device error: cuLaunchKernel failed"), res.stderr
    log = (run / rf.ERROR_LOG).read_text()
    assert "LogicError" in log and "cuLaunchKernel failed" in log, log[-2000:]  # pycuda's driver error, logged
