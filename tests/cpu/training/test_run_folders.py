"""Run folders are never shared by accident (issue 26 item 2): unique default names, an existing run
folder refused without --resume, the user's own default base folder, run_config.json valid after
resumes, no folder left by a failed validation, two runs started at once get two folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from warp_drive.config import load_run_config
from warp_drive.errors import ConfigError
from warp_drive.training.run.run_folder import DEFAULT_BASEDIR, claim_run_folder, default_run_name

ROOT = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "warp_drive.training.example_training_script"]
SMALL = ["--env", "cartpole", "--backend", "cpu", "--quiet", "--eval_episodes", "0", "trainer.num_envs=2",
         "trainer.train_batch_size=16", "trainer.num_episodes=4", "env.episode_length=8"]


def _cli(tmp_path: Path, *argv: str, basedir: Path | None = None) -> subprocess.CompletedProcess:
    extra = [f"saving.basedir={basedir}"] if basedir is not None else []
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    return subprocess.run([*CLI, *SMALL, *extra, *argv], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_default_names_differ_within_a_second_and_claims_never_collide(tmp_path):
    names = {default_run_name() for _ in range(50)}
    assert len(names) == 50  # microseconds in the name
    folder = tmp_path / "runs" / "x"
    first = claim_run_folder(folder, default_name=True, resume=False)
    second = claim_run_folder(folder, default_name=True, resume=False)  # same name: a suffix is added
    assert first == folder and second != first and second.parent == folder.parent and second.is_dir()


def test_default_basedir_is_the_users_own_and_a_named_basedir_is_kept():
    cfg = load_run_config("warp_drive/training/run_configs/tag_continuous.yaml")
    assert cfg.saving.basedir == DEFAULT_BASEDIR and not DEFAULT_BASEDIR.startswith("/tmp")
    assert load_run_config("warp_drive/training/run_configs/tag_continuous.yaml",
                           ["saving.basedir=/tmp"]).saving.basedir == "/tmp"  # a 2.7.1 config that names it


def test_existing_run_folder_needs_resume_with_one_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint_00000004.pt").write_bytes(b"x")
    with pytest.raises(ConfigError) as err:
        claim_run_folder(run, default_name=False, resume=False)
    message = str(err.value)
    assert "\n" not in message and f"--resume {run}" in message and f"--results_dir {tmp_path / 'run-2'}" in message
    assert claim_run_folder(tmp_path / "empty", default_name=False, resume=False).is_dir()  # new or empty: used


def test_cli_resume_keeps_run_config_valid_and_refuses_a_rerun(tmp_path):
    first = _cli(tmp_path, "--results_dir", "run")
    assert first.returncode == 0, first.stderr
    again = _cli(tmp_path, "--results_dir", "run")
    assert again.returncode == 2 and "--resume" in again.stderr and "run-2" in again.stderr
    for _ in range(2):
        resumed = _cli(tmp_path, "--resume", "run", "trainer.num_episodes=8")
        assert resumed.returncode == 0, resumed.stderr
    config = json.loads((tmp_path / "run" / "run_config.json").read_text())  # one JSON object, not appended lines
    assert config["trainer"]["num_episodes"] == 8  # the latest start's config


def test_failed_validation_leaves_no_folder(tmp_path):
    bad = _cli(tmp_path, "--results_dir", "new_run", "trainer.num_envs=-3")
    assert bad.returncode == 2 and not (tmp_path / "new_run").exists()
    bad_env = _cli(tmp_path, "--results_dir", "new_run2", "env.no_such_kwarg=1")
    assert bad_env.returncode == 2 and not (tmp_path / "new_run2").exists(), bad_env.stderr


def test_two_runs_started_at_once_get_two_folders(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([*CLI, *SMALL], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    base = tmp_path / "home" / "warp_drive_runs"  # the default basedir under the user's home
    runs = sorted(p for p in base.rglob("run_config.json"))
    assert len(runs) == 2 and runs[0].parent != runs[1].parent
    for run in runs:
        rows = (run.parent / "metrics.csv").read_text().splitlines() if (run.parent / "metrics.csv").exists() else []
        assert len({line for line in rows}) == len(rows)  # each run's rows once: no interleaving of two runs
