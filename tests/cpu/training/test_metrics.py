"""MetricsWriter: JSONL/CSV round trips, union CSV header, tensors, table, TensorBoard, no-op."""

from __future__ import annotations

import json
import logging
import math
import sys

import numpy as np
import pytest
import torch

from warp_drive.errors import ConfigError, DataShapeError, DataTypeError, WarpDriveError
from warp_drive.training.run.metrics import (
    MetricsWriter,
    format_number,
    format_table,
    read_metrics,
)

ROWS = [
    (
        0,
        1000,
        {"runner/episode_return_mean": 1.5, "runner/loss": -0.25, "perf/env_steps_per_s": 9e5},
    ),
    (
        1,
        2000,
        {"runner/episode_return_mean": 2.5, "runner/loss": -0.125, "perf/env_steps_per_s": 1e6},
    ),
]


def expected(rows):
    return [{"iteration": i, "timestep": t, **m} for i, t, m in rows]


@pytest.mark.parametrize("fmt,name", [("jsonl", "metrics.jsonl"), ("csv", "metrics.csv")])
def test_round_trip(tmp_path, fmt, name):
    with MetricsWriter(tmp_path, formats=(fmt,), console_every=None) as writer:
        for row in ROWS:
            writer.write(*row)
        assert writer.rows_written == 2
        assert writer.metrics_path == tmp_path / name
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert read_metrics(tmp_path / name) == expected(ROWS)
    assert read_metrics(tmp_path) == expected(ROWS)  # directory form


def test_jsonl_key_order_and_flush_after_each_write(tmp_path):
    writer = MetricsWriter(tmp_path, console_every=None)
    writer.write(*ROWS[0])
    # Readable before close: flushed after every write.
    line = (tmp_path / "metrics.jsonl").read_text().splitlines()[0]
    assert list(json.loads(line)) == ["iteration", "timestep", *ROWS[0][2]]
    assert read_metrics(tmp_path / "metrics.csv") == expected(ROWS[:1])
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(WarpDriveError, match="closed"):
        writer.write(*ROWS[1])


def test_csv_union_header_when_keys_appear_later(tmp_path):
    rows = [
        (0, 10, {"a/x": 1.0}),
        (1, 20, {"a/x": 2.0, "b/episode_return_mean": 3.0}),
        (2, 30, {"b/episode_return_mean": 4.0, "perf/env_steps_per_s": 5}),
        (3, 40, {"a/x": 6.0}),
    ]
    with MetricsWriter(tmp_path, formats=("csv",), console_every=None) as writer:
        for row in rows:
            writer.write(*row)
    lines = (tmp_path / "metrics.csv").read_text().splitlines()
    assert lines[0] == "iteration,timestep,a/x,b/episode_return_mean,perf/env_steps_per_s"
    assert len(lines) == 5  # one header, no stale headers in between
    assert lines[1] == "0,10,1.0,,"
    assert read_metrics(tmp_path / "metrics.csv") == expected(rows)
    assert not list(tmp_path.glob("*.tmp"))


def test_reopen_appends_under_existing_header(tmp_path):
    with MetricsWriter(tmp_path, console_every=None) as writer:
        writer.write(*ROWS[0])
    with MetricsWriter(tmp_path, console_every=None) as writer:
        writer.write(*ROWS[1])
        writer.write(2, 3000, {"runner/new": 7})
    want = expected([*ROWS, (2, 3000, {"runner/new": 7})])
    assert read_metrics(tmp_path / "metrics.csv") == want
    assert read_metrics(tmp_path / "metrics.jsonl") == want


def test_tensor_values_one_stack_no_item(tmp_path, monkeypatch):
    calls = []
    real_stack = torch.stack

    def counting_stack(*args, **kwargs):
        calls.append(1)
        return real_stack(*args, **kwargs)

    def no_item(self):
        raise AssertionError("MetricsWriter must not call Tensor.item() per value")

    monkeypatch.setattr(torch, "stack", counting_stack)
    monkeypatch.setattr(torch.Tensor, "item", no_item)
    metrics = {
        "p/ret": torch.tensor(1.5),
        "p/count": torch.tensor(7, dtype=torch.int64),
        "p/flag": torch.tensor(True),
        "p/half": torch.tensor([0.25], dtype=torch.float16),
        "p/plain": 2.0,
        "p/np": np.float32(0.5),
        "p/np_int": np.int64(3),
    }
    with MetricsWriter(tmp_path, console_every=None) as writer:
        writer.write(0, 100, metrics)
    assert len(calls) == 1
    (row,) = read_metrics(tmp_path / "metrics.jsonl")
    assert row == {
        "iteration": 0,
        "timestep": 100,
        "p/ret": 1.5,
        "p/count": 7,
        "p/flag": 1,
        "p/half": 0.25,
        "p/plain": 2.0,
        "p/np": 0.5,
        "p/np_int": 3,
    }
    assert isinstance(row["p/count"], int) and isinstance(row["p/ret"], float)
    assert read_metrics(tmp_path / "metrics.csv") == [row]


def test_bad_values_and_keys(tmp_path):
    writer = MetricsWriter(tmp_path, console_every=None)
    with pytest.raises(DataShapeError):
        writer.write(0, 0, {"p/v": torch.zeros(3)})
    with pytest.raises(DataTypeError):
        writer.write(0, 0, {"p/v": "high"})
    with pytest.raises(ConfigError):
        writer.write(0, 0, {"timestep": 3})
    with pytest.raises(ConfigError, match="formats"):
        MetricsWriter(tmp_path, formats=("parquet",))
    writer.close()


def test_format_number():
    assert format_number(1.23456) == "1.23"
    assert format_number(-0.000123456) == "-0.000123"
    assert format_number(1234567.8) == "1,234,568"
    assert format_number(48000) == "48,000"
    assert format_number(float("nan")) == "nan"
    assert format_number(1e-7) == "1e-07"


def test_format_table_groups_and_alignment():
    table = format_table(
        3,
        12000,
        {
            "runner/episode_return_mean": torch.tensor(1.23456),
            "tagger/episode_return_mean": -4.5678,
            "runner/loss": 0.01234,
            "perf/env_steps_per_s": 1234567.0,
            "lr": 3e-4,
        },
    )
    lines = table.splitlines()
    assert "iteration 3" in table and "timestep 12,000" in table
    for group in ("runner", "tagger", "perf", "misc"):
        assert group in lines
    for text in ("1.23", "-4.57", "0.0123", "1,234,567", "0.0003"):
        assert text in table
    value_rows = [ln for ln in lines if ln.startswith("  ")]
    assert len(value_rows) == 5
    assert len({len(ln) for ln in value_rows}) == 1  # values right-aligned in one column
    assert lines.index("runner") < lines.index("tagger") < lines.index("perf")


def test_console_logging_every_n(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="warp_drive.training.run.metrics")
    with MetricsWriter(tmp_path, console_every=2) as writer:
        for i in range(4):
            writer.write(i, 10 * i, {"perf/env_steps_per_s": 5000.0})
    tables = [r.getMessage() for r in caplog.records if "perf" in r.getMessage()]
    assert len(tables) == 2
    assert "iteration 1" in tables[0] and "iteration 3" in tables[1]
    assert "5,000" in tables[0]


def test_disabled_writer_is_noop(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    run_dir = tmp_path / "rank1"
    with MetricsWriter(run_dir, tensorboard=True, enabled=False) as writer:
        writer.write(*ROWS[0])
    assert not run_dir.exists()
    assert not caplog.records


def test_tensorboard_missing_raises_config_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ConfigError, match="pip install tensorboard"):
        MetricsWriter(tmp_path, tensorboard=True)


def test_tensorboard_event_file(tmp_path):
    pytest.importorskip("tensorboard", reason="tensorboard is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with MetricsWriter(tmp_path, tensorboard=True, console_every=None) as writer:
        for row in ROWS:
            writer.write(*row)
    events = list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == set(ROWS[0][2])
    scalars = acc.Scalars("runner/episode_return_mean")
    assert [s.step for s in scalars] == [1000, 2000]
    assert [s.value for s in scalars] == [1.5, 2.5]
    assert math.isclose(acc.Scalars("perf/env_steps_per_s")[1].value, 1e6)


def test_read_metrics_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        read_metrics(tmp_path / "nope.jsonl")
    with pytest.raises(ConfigError, match="no metrics"):
        read_metrics(tmp_path)
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(ConfigError, match="suffix"):
        read_metrics(tmp_path / "m.txt")
