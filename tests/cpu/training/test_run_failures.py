"""Failures after training started: exit code, at most a few lines, error.log, and the checkpoint named intact loads."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
import torch

from warp_drive.errors import NonFiniteError
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training import example_training_script as script
from warp_drive.training.run import run_failures as rf

# 4 iterations of 200 env steps, a checkpoint after each
RUN = ["--env", "cartpole", "--backend", "cpu", "--quiet", "trainer.num_envs=4", "trainer.train_batch_size=200",
       "env.episode_length=50", "trainer.num_episodes=16", "saving.model_params_save_freq=1"]


def _main(argv, capsys):
    rc = script.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _check_report(run: Path, rc: int, err: str, code: int, what: str, intact_iteration: int | None) -> list[str]:
    lines = err.strip().splitlines()
    assert rc == code, err
    assert len(lines) <= 5 and lines[0].startswith("error: ") and what in lines[0], err
    assert "Traceback" not in err
    log = run / rf.ERROR_LOG
    assert f"traceback: {log} (--debug prints it)" in lines and "Traceback (most recent call last)" in log.read_text()
    if intact_iteration is None:
        assert any(line.startswith("intact: no readable checkpoint") for line in lines), err
        return lines
    intact = next(line for line in lines if line.startswith("intact: "))
    path = Path(intact.split()[1])
    assert intact.endswith(f"(iteration {intact_iteration})") and path.parent == run, err
    _, state = ckpt.resolve_checkpoint(path)  # the checkpoint named intact loads
    assert int(state["iteration"]) == intact_iteration
    assert f"resume: {script.PROG} --resume {run}" in err
    return lines


def _fail_at_iteration(monkeypatch, iteration: int, action) -> None:
    """Runs ``action(save_dir, path)`` before the checkpoint of ``iteration`` is written."""
    real = ckpt.write_checkpoint

    def writer(path, save_dir, state, policy_files):
        if int(state["iteration"]) == iteration:
            action(Path(save_dir), Path(path))
        return real(path, save_dir, state, policy_files)

    monkeypatch.setattr(ckpt, "write_checkpoint", writer)


def test_disk_full_while_checkpointing_keeps_the_previous_checkpoint_resumable(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    real_save = torch.save

    def full_disk(obj, f, *args, **kwargs):
        if isinstance(obj, dict) and obj.get("iteration") == 3:
            f.write(b"PK\x03\x04 partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    rc, _, err = _main(RUN + ["--results_dir", str(run)], capsys)
    _check_report(run, rc, err, rf.EXIT_IO, "disk full while writing checkpoint_00000003.pt (OSError ENOSPC)", 2)
    assert not list(run.glob(".tmp_*")) and "No space left on device" in (run / rf.ERROR_LOG).read_text()
    monkeypatch.setattr(torch, "save", real_save)
    assert script.main(RUN + ["--resume", str(run)]) == 0  # the intact checkpoint resumes to the end
    assert ckpt.resolve_checkpoint(run)[1]["iteration"] == 4


def test_results_folder_made_unwritable_mid_run(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    if os.geteuid() != 0:
        _fail_at_iteration(monkeypatch, 3, lambda save_dir, path: save_dir.chmod(0o500))
    else:  # root ignores permissions: the rename into place is refused instead
        real_replace = os.replace

        def refuse(src, dst, *args, **kwargs):
            if Path(dst).name == "checkpoint_00000003.pt":
                raise PermissionError(errno.EACCES, "Permission denied")
            return real_replace(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, "replace", refuse)
    try:
        rc, _, err = _main(RUN + ["--results_dir", str(run)], capsys)
    finally:
        run.chmod(0o700)
    _check_report(run, rc, err, rf.EXIT_IO, f"the run folder {run} is not writable (permission denied)", 2)


def test_results_folder_deleted_mid_run(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    real = ckpt.write_checkpoint

    def write_then_delete(path, save_dir, state, policy_files):  # the folder vanishes after iteration 2's checkpoint
        written = real(path, save_dir, state, policy_files)
        if int(state["iteration"]) == 2:
            shutil.rmtree(save_dir)
        return written

    monkeypatch.setattr(ckpt, "write_checkpoint", write_then_delete)
    rc, _, err = _main(RUN + ["--results_dir", str(run)], capsys)
    lines = err.strip().splitlines()
    assert rc == rf.EXIT_IO and len(lines) <= 5, err
    assert lines[0].startswith(f"error: the run folder {run} is gone (deleted or unmounted)"), err
    assert lines[1] == f"intact: no readable checkpoint in {run}; start a new run"
    log = Path(lines[-1].split()[1])
    assert log.parent != run and "Traceback" in log.read_text()  # the folder is gone: a temporary file
    log.unlink()


def _finished_run(tmp_path: Path, capsys) -> Path:
    run = tmp_path / "run"
    assert script.main(RUN + ["trainer.num_episodes=8", "--results_dir", str(run)]) == 0
    capsys.readouterr()
    return run


@pytest.mark.parametrize("kind", ["random bytes", "foreign file"])
def test_corrupt_or_foreign_checkpoint_given_to_resume(tmp_path, capsys, kind):
    run = _finished_run(tmp_path, capsys)
    bad = run / "checkpoint_00000009.pt"
    if kind == "random bytes":
        bad.write_bytes(os.urandom(4096))
    else:
        torch.save({"weights": torch.zeros(3)}, bad)  # intact, but not a trainer checkpoint
    rc, _, err = _main(RUN + ["--resume", str(bad)], capsys)
    what = "is corrupt or truncated" if kind == "random bytes" else "is not a trainer checkpoint"
    _check_report(run, rc, err, rf.EXIT_CHECKPOINT, what, 2)


def test_corrupt_run_folder_without_intact_checkpoint(tmp_path, capsys):
    run = tmp_path / "corrupt"
    run.mkdir()
    (run / "checkpoint_latest.pt").write_bytes(b"PK\x03\x04 not a checkpoint")
    rc, _, err = _main(RUN + ["--resume", str(run)], capsys)
    _check_report(run, rc, err, rf.EXIT_CHECKPOINT, "corrupt or truncated", None)


def test_config_mismatch_on_resume_lists_only_the_differing_keys(tmp_path, capsys):
    run = _finished_run(tmp_path, capsys)
    rc, _, err = _main(RUN + ["trainer.num_envs=8", "--resume", str(run)], capsys)
    lines = _check_report(run, rc, err, rf.EXIT_USAGE, "trainer.num_envs", 2)
    assert "env.episode_length" not in lines[0] and len(lines[0]) < 600, lines[0]
    assert "leave out --env/--config" in err


@pytest.mark.parametrize("error, code, what", [
    (RuntimeError("CUDA error: an illegal memory access was encountered"), rf.EXIT_DEVICE, "CUDA/device error: CUDA error"),
    (NonFiniteError("training stopped at iteration 1, before its checkpoint: the rewards hold nan"), rf.EXIT_NONFINITE,
     "the rewards hold nan"),
    (KeyError("surprise"), rf.EXIT_OTHER, "unexpected KeyError: 'surprise'"),
])
def test_errors_during_training_have_their_exit_code(tmp_path, monkeypatch, capsys, error, code, what):
    from warp_drive.training.run.trainer import Trainer  # the command lines' (plain) Trainer

    run = tmp_path / "run"
    monkeypatch.setattr(Trainer, "train", lambda self, num_iters=None: (_ for _ in ()).throw(error))
    rc, _, err = _main(RUN + ["--results_dir", str(run)], capsys)
    _check_report(run, rc, err, code, what, None)
    rc, _, err = _main(RUN + ["--debug", "--results_dir", str(tmp_path / "debug")], capsys)
    assert rc == code and "Traceback (most recent call last)" in err and f"traceback: {tmp_path / 'debug' / rf.ERROR_LOG}" in err
