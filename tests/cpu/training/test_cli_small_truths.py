"""Issue 39 item 3, the training command line's small truths: a finished run resumes to "nothing left to
train" and its evaluation; a resume says ``resumed from`` once; ``--evaluate`` without trained weights
refuses with the fix and leaves no folder; ``--help`` lists the example envs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from warp_drive.cli import train
from warp_drive.cli.envs import example_env_names

ROOT = Path(__file__).resolve().parents[3]
TINY = [sys.executable, "-m", "warp_drive.training.example_training_script", "--env", "cartpole", "--backend", "cpu",
        "trainer.num_envs=4", "trainer.train_batch_size=200", "env.episode_length=50", "--eval_episodes", "4"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    return subprocess.run(TINY + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_resume_says_resumed_once_and_a_finished_run_has_nothing_left_to_train(tmp_path):
    run = tmp_path / "run"
    first = _run(["trainer.num_episodes=8", "--results_dir", str(run)], tmp_path)  # 2 iterations
    assert first.returncode == 0, first.stderr[-2000:]
    more = _run(["trainer.num_episodes=12", "--resume", str(run)], tmp_path)  # 1 more
    assert more.returncode == 0, more.stderr[-2000:]
    assert more.stdout.count("resumed from") == 1 and "at iteration 2 of 3" in more.stdout, more.stdout
    assert "done: iterations 3-3 of 3" in more.stdout
    done = _run(["trainer.num_episodes=12", "--resume", str(run)], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.count("resumed from") == 1 and "at iteration 3 of 3" in out, out
    assert "nothing left to train: the run finished all 3 iterations" in out
    assert "estimated" not in out + done.stderr and "done: iterations" not in out, out
    assert "evaluation: final policy" in out and "verdict:" in out and out.splitlines()[-1] == f"results: {run}"


def test_evaluate_without_trained_weights_refuses_with_the_fix_and_leaves_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for extra in (["--results_dir", str(tmp_path / "ev")], ["saving.basedir=" + str(tmp_path / "base")]):
        code = train.main(["--env", "cartpole", "--backend", "cpu", "--evaluate", *extra])
        err = capsys.readouterr().err
        assert code == 2
        assert err.splitlines()[0].startswith("error: --evaluate scores trained weights") and "--resume RUN_FOLDER" in err
        assert "model_ckpt_filepath" in err
    assert list(tmp_path.iterdir()) == []


def test_evaluate_with_a_weights_file_in_the_config_is_not_refused(tmp_path):
    args = train.parse_args(["--env", "cartpole", "--backend", "cpu", "--evaluate", "--results_dir", str(tmp_path / "r"),
                             "policy.shared.model.model_ckpt_filepath=" + str(tmp_path / "w.state_dict")])
    assert train.plan_run(args, announce=False).config.policy["shared"].model.model_ckpt_filepath


def test_help_lists_the_example_envs(capsys):
    with pytest.raises(SystemExit) as info:
        train.parse_args(["--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    names = example_env_names()
    assert "cartpole" in names and "tag_continuous" in names
    assert all(name in text for name in names), text
