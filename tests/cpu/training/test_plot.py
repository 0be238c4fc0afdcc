"""plot_learning_curves / make_figure / the CLI: PNGs written with one axes per key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from warp_drive.errors import ConfigError
from warp_drive.training.run.metrics import MetricsWriter, read_metrics
from warp_drive.training.run.plot import default_keys, main, make_figure, plot_learning_curves

pytest.importorskip("matplotlib", reason="matplotlib is not installed")

REPO_ROOT = Path(__file__).resolve().parents[3]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    with MetricsWriter(tmp_path / "run", console_every=None) as writer:
        for i in range(5):
            writer.write(
                i,
                1000 * (i + 1),
                {
                    "runner/episode_return_mean": 0.5 * i,
                    "runner/loss": 1.0 / (i + 1),
                    "tagger/episode_return_mean": -0.5 * i,
                    "perf/env_steps_per_s": 1e6 + i,
                },
            )
    return tmp_path / "run"


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC)


def test_default_keys(run_dir):
    rows = read_metrics(run_dir / "metrics.jsonl")
    assert default_keys(rows) == [
        "runner/episode_return_mean",
        "tagger/episode_return_mean",
        "perf/env_steps_per_s",
    ]
    assert default_keys([{"timestep": 1, "a/loss": 2.0}]) == []


@pytest.mark.parametrize("name", ["metrics.jsonl", "metrics.csv"])
def test_plot_default_keys(run_dir, name):
    out = plot_learning_curves(run_dir / name)
    assert out == run_dir / "learning_curves.png"
    assert_png(out)
    fig = make_figure(read_metrics(run_dir / name))
    assert len(fig.axes) == 3
    assert [ax.get_title() for ax in fig.axes] == default_keys(read_metrics(run_dir / name))
    assert all(ax.get_xlabel() == "timestep" for ax in fig.axes)
    assert list(fig.axes[0].lines[0].get_xdata()) == [1000, 2000, 3000, 4000, 5000]


def test_plot_explicit_keys_and_out_path(run_dir, tmp_path):
    out = plot_learning_curves(run_dir, tmp_path / "sub" / "one.png", keys=["runner/loss"])
    assert out == tmp_path / "sub" / "one.png"
    assert_png(out)
    rows = read_metrics(run_dir)
    assert len(make_figure(rows, ["runner/loss"]).axes) == 1
    four = ["runner/loss", *default_keys(rows)]
    assert len(make_figure(rows, four).axes) == 4  # 2x2 grid, no spare axes


def test_plot_bad_keys(run_dir):
    with pytest.raises(ConfigError, match="not in the rows"):
        plot_learning_curves(run_dir / "metrics.jsonl", keys=["nope/x"])
    with pytest.raises(ConfigError, match="no metric to plot"):
        make_figure([{"iteration": 0, "timestep": 1, "a/loss": 1.0}])


def test_missing_matplotlib_raises_config_error(monkeypatch, run_dir):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ConfigError, match="pip install matplotlib"):
        plot_learning_curves(run_dir / "metrics.jsonl")


def test_main_in_process(run_dir, tmp_path, capsys):
    out = tmp_path / "main.png"
    assert main([str(run_dir / "metrics.csv"), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert_png(out)
    assert main([str(run_dir / "metrics.csv"), "--keys", "nope"]) == 2
    assert "not in the rows" in capsys.readouterr().err


def test_cli_subprocess(run_dir, tmp_path):
    out = tmp_path / "cli.png"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable,
        "-m",
        "warp_drive.training.run.plot",
        str(run_dir / "metrics.jsonl"),
        "-o",
        str(out),
        "--keys",
        "runner/episode_return_mean",
        "runner/loss",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    assert_png(out)
