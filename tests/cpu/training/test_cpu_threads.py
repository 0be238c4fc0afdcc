"""Torch's thread count on the cpu backend (warp_drive.utils.cpu_threads): the one decision (env
var, the user's torch / OpenMP setting, cores from the affinity mask, agent rows) and that every
cpu path (a Trainer built in Python, the CLI with --config and --resume, the Lightning module)
ends up with the chosen count and logs the one line."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.threads import restored_threads
from tests.helpers.toy_env import ToyLine
from warp_drive.env.env_wrapper import EnvWrapper
from warp_drive.errors import ConfigError
from warp_drive.training import example_training_script as script
from warp_drive.training.trainer import Trainer
from warp_drive.utils import cpu_threads
from warp_drive.utils.cpu_threads import ENV_VAR, ROWS_PER_THREAD, available_cores, choose_threads

ROOT = Path(__file__).resolve().parents[3]
CARTPOLE = ROOT / "example_envs" / "classic_control" / "cartpole" / "run_config.yaml"
TINY_CARTPOLE = ["trainer.num_envs=4", "trainer.train_batch_size=200", "trainer.num_episodes=2", "env.episode_length=100"]
LINE = "cpu backend: torch uses "
START = torch.get_num_interop_threads()  # torch's start-up count here (no OMP_NUM_THREADS in the test run)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """A process as torch starts it: its start-up thread count, no thread variables, nothing chosen
    yet; the count, the variable and the module state restored after the test."""
    for var in (ENV_VAR, "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    with restored_threads():
        cpu_threads._last_set = None
        torch.set_num_threads(START)
        yield


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(LINE)]


# ----------------------------------------------------------------------------- the decision
def test_the_env_var_wins_and_is_named():
    choice = choose_threads(100_000, {ENV_VAR: "3", "OMP_NUM_THREADS": "1"}, cores=2)
    assert (choice.threads, choice.chosen_here) == (3, True)
    assert choice.line() == (f"cpu backend: torch uses 3 threads (2 cores, os.sched_getaffinity; {ENV_VAR}=3; "
                             f"set {ENV_VAR} to change)")


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_bad_env_value_is_a_config_error_naming_it_and_the_fix(value):
    with pytest.raises(ConfigError, match=f"{ENV_VAR}='{value}'.*whole number >= 1.*{ENV_VAR}=1"):
        choose_threads(100, {ENV_VAR: value})


def test_a_bad_env_value_fails_the_wrapper_build(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "abc")
    with pytest.raises(ConfigError, match=ENV_VAR):
        EnvWrapper(ToyLine(num_agents=2), num_envs=2, env_backend="cpu")


@pytest.mark.parametrize("rows, cores, expected", [(8, 2, 1), (240, 2, 1), (ROWS_PER_THREAD - 1, 2, 1),
                                                   (2 * ROWS_PER_THREAD, 2, 2), (11_000, 2, 2), (11_000, 16, 10),
                                                   (11_000, 1, 1)])
def test_auto_gives_a_thread_per_rows_per_thread_within_the_cores(rows, cores, expected):
    choice = choose_threads(rows, {}, cores=cores)
    assert (choice.threads, choice.cores, choice.chosen_here) == (expected, cores, True)
    assert f"{rows} agent rows a step" in choice.line()


def test_a_count_the_user_set_with_torch_is_kept():
    torch.set_num_threads(START + 1)
    choice = choose_threads(100, {}, cores=2)
    assert (choice.threads, choice.chosen_here) == (START + 1, False)
    assert "set by torch.set_num_threads" in choice.line()


def test_omp_num_threads_is_kept():
    choice = choose_threads(100_000, {"OMP_NUM_THREADS": str(START)}, cores=2)
    assert (choice.threads, choice.rule, choice.chosen_here) == (START, f"OMP_NUM_THREADS={START}", False)


def test_a_count_chosen_here_is_chosen_again_for_the_next_wrapper(monkeypatch):
    monkeypatch.setattr(cpu_threads, "available_cores", lambda environ=None: 2)
    assert cpu_threads.apply_cpu_threads(8).threads == 1 and torch.get_num_threads() == 1
    assert cpu_threads.apply_cpu_threads(4 * ROWS_PER_THREAD).threads == 2 and torch.get_num_threads() == 2


def test_cores_come_from_the_affinity_mask_shared_by_local_processes(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert available_cores({}) == 4
    assert available_cores({"LOCAL_WORLD_SIZE": "2"}) == 2
    assert available_cores({"LOCAL_WORLD_SIZE": "8"}) == 1


def test_importing_warp_drive_leaves_torch_threads_alone():
    code = ("import torch; torch.set_num_threads(3); import warp_drive, warp_drive.env.env_wrapper, "
            "warp_drive.training.trainer, warp_drive.utils.cpu_threads; print(torch.get_num_threads())")
    env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    assert out.stdout.strip() == "3"


# ----------------------------------------------------------------------------- every cpu path
def test_a_trainer_built_in_python_gets_the_choice_and_one_line(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=cpu_threads.__name__)
    config = {"name": "toy", "trainer": {"num_envs": 4, "train_batch_size": 16, "num_episodes": 8, "env_backend": "cpu"},
              "policy": {"shared": {"to_train": True, "model": {"fc_dims": [8]}}},
              "saving": {"basedir": str(tmp_path)}}
    Trainer(EnvWrapper(ToyLine(num_agents=2), num_envs=4, env_backend="cpu"), config, verbose=False)
    expected = choose_threads(8, {}).threads
    assert torch.get_num_threads() == expected == 1
    assert _lines(caplog) == [choose_threads(8, {}).line()]


def test_the_cli_with_config_and_with_resume_gets_the_choice_and_one_line(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=cpu_threads.__name__)
    run = tmp_path / "run"
    assert script.main(["--config", str(CARTPOLE), "--backend", "cpu", "--quiet", *TINY_CARTPOLE,
                        "--results_dir", str(run)]) == 0
    assert torch.get_num_threads() == 1 and len(_lines(caplog)) == 1
    caplog.clear()
    torch.set_num_threads(START)
    cpu_threads._last_set = None
    trainer = script.build(script.parse_args(["--resume", str(run), "--backend", "cpu", "--quiet"]))
    assert trainer.engine.iteration > 0 and torch.get_num_threads() == 1
    assert _lines(caplog) == [f"{LINE}1 thread ({available_cores()} cores, os.sched_getaffinity; 4 agent rows a step, "
                              f"one thread per {ROWS_PER_THREAD}; set {ENV_VAR} to change)"]


def test_the_cli_prints_the_line_and_honours_the_env_var(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), **{ENV_VAR: "1"})
    out = subprocess.run([sys.executable, "-m", "warp_drive.training.example_training_script", "--config", str(CARTPOLE),
                          "--backend", "cpu", *TINY_CARTPOLE, "--results_dir", str(tmp_path / "run")],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith(LINE)]
    assert lines == [f"{LINE}1 thread ({available_cores()} cores, os.sched_getaffinity; {ENV_VAR}=1; "
                     f"set {ENV_VAR} to change)"]


def test_the_lightning_module_gets_the_choice_and_one_line(monkeypatch, caplog):
    pytest.importorskip("lightning", reason="PyTorch Lightning is not installed: pip install -e '.[lightning]'")
    from warp_drive.training.lightning import ExampleEnvEngineFactory, WarpDriveModule

    caplog.set_level(logging.INFO, logger=cpu_threads.__name__)
    monkeypatch.setenv(ENV_VAR, "2")
    factory = ExampleEnvEngineFactory(env="cartpole", overrides=TINY_CARTPOLE, backend="cpu")
    module = WarpDriveModule(factory(rank=0, world_size=1, device_id=None), iterations_per_epoch=1)
    assert module.num_iters >= 1 and torch.get_num_threads() == 2
    assert _lines(caplog) == [choose_threads(4).line()]
