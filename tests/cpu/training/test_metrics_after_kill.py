"""The metric files hold each iteration exactly once after any kill and resume (issue 26 item 8).

A SIGKILL can leave: rows logged after the checkpoint that a resume uses, a torn last line (a JSONL
line cut short, a CSV row cut inside its last value, so of the right width but without its line
end), a checkpoint newer than the last row, or (a guard) an iteration twice. These states are built
directly rather than by timing real kills (test_crash_resume.py sends a real SIGKILL to the CLI).
"""

from __future__ import annotations

import shutil

import pytest

from tests.cpu.training.test_crash_resume import ITERS, _rows, _trainer
from warp_drive.training.run import checkpoint as ckpt
from warp_drive.training.run.metrics import MetricsWriter, read_metrics, truncate_metrics


def _write(folder, iterations):
    with MetricsWriter(folder, console_every=0) as w:
        for i in iterations:
            w.write(i, 10 * i, {"a/x": i + 0.123456789})


def _iterations(folder):
    return ([r["iteration"] for r in read_metrics(folder / "metrics.jsonl")],
            [r["iteration"] for r in read_metrics(folder / "metrics.csv")])


def test_torn_csv_row_of_full_width_without_line_end_is_dropped(tmp_path):
    _write(tmp_path, [1, 2, 3])
    text = (tmp_path / "metrics.csv").read_text()
    (tmp_path / "metrics.csv").write_text(text + "4,40,4.12")  # cut inside the last value
    with open(tmp_path / "metrics.jsonl", "a") as fh:
        fh.write('{"iteration": 4, "timestep": 40, "a/x": 4.1')
    assert truncate_metrics(tmp_path, 10) == 2
    assert _iterations(tmp_path) == ([1, 2, 3], [1, 2, 3])
    _write(tmp_path, [4, 5])  # the resumed run appends after whole lines
    assert _iterations(tmp_path) == ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert read_metrics(tmp_path / "metrics.csv")[3]["a/x"] == 4.123456789


def test_each_iteration_once_keeping_the_last_row(tmp_path):
    _write(tmp_path, [1, 2, 3, 2, 3, 4, 5])  # an iteration twice (guard), and rows beyond the checkpoint
    assert truncate_metrics(tmp_path, 3) == 4 + 4
    assert _iterations(tmp_path) == ([1, 2, 3], [1, 2, 3])
    assert truncate_metrics(tmp_path, 3) == 0


def test_checkpoint_newer_than_the_rows_drops_nothing(tmp_path):
    _write(tmp_path, [1, 3, 6])
    before = {n: (tmp_path / n).read_bytes() for n in ("metrics.jsonl", "metrics.csv")}
    assert truncate_metrics(tmp_path, 8) == 0
    assert {n: (tmp_path / n).read_bytes() for n in before} == before  # not rewritten


def test_a_row_is_one_write_call(tmp_path, monkeypatch):
    import os

    calls = []
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append(bytes(data)) or real(fd, data))
    _write(tmp_path, [1, 2])
    assert len(calls) == 4 and all(c.endswith(b"\n") for c in calls)  # header + row 1 together in the CSV


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A run trained to the end (checkpoints at 4, 8, 12) and its rows (the uninterrupted reference)."""
    tmp = tmp_path_factory.mktemp("finished")
    _trainer(tmp, "run").train()
    return tmp, _rows(tmp / "run")


@pytest.mark.parametrize("state", ["rows_beyond_checkpoint", "torn_last_line", "checkpoint_newer_than_rows",
                                   "iteration_twice"])
def test_resume_after_each_kill_state_logs_each_iteration_once(tmp_path, finished, state):
    src, ref_rows = finished
    run = tmp_path / "run"
    shutil.copytree(src / "run", run)
    (run / "checkpoint_00000012.pt").unlink()  # the kill came before checkpoint 12: resume from 8
    shutil.copy(run / "checkpoint_00000008.pt", run / ckpt.LATEST)
    jsonl, csv_path = run / "metrics.jsonl", run / "metrics.csv"
    rows = jsonl.read_text().splitlines(keepends=True)
    csv_rows = csv_path.read_text().splitlines(keepends=True)
    at = {int(line.split(",")[0]): line for line in csv_rows[1:]}
    kept = [i for i in sorted(at) if i <= 8]
    if state != "rows_beyond_checkpoint":  # the files end at the checkpoint's rows
        jsonl.write_text("".join(rows[:len(kept)]))
        csv_path.write_text("".join(csv_rows[:len(kept) + 1]))
    if state == "torn_last_line":
        with open(jsonl, "a") as fh:
            fh.write(rows[len(kept)][:25])
        with open(csv_path, "a") as fh:
            fh.write(at[9].rstrip()[:-3])  # full width, last value cut
    if state == "iteration_twice":
        with open(jsonl, "a") as fh:
            fh.write(rows[len(kept) - 1])
        with open(csv_path, "a") as fh:
            fh.write(at[kept[-1]])
    resumed = _trainer(tmp_path, "run")
    resumed.load_checkpoint(run)
    assert resumed.iteration == 8
    resumed.train()
    resumed.graceful_close()
    mine = _rows(run)
    assert [r["iteration"] for r in mine] == [r["iteration"] for r in ref_rows]
    assert mine == ref_rows
    csv_iters = [r["iteration"] for r in read_metrics(csv_path)]
    assert csv_iters == [r["iteration"] for r in ref_rows] and ITERS in csv_iters
