"""Learning curves from a run's ``metrics.jsonl`` / ``metrics.csv``, saved as PNG.

Usage::

    python -m warp_drive.training.run.plot runs/exp1/metrics.jsonl [-o curves.png] [--keys K ...]

matplotlib is imported lazily and drawn through the Agg canvas directly, so the global
matplotlib backend (and any interactive session) is left untouched.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_drive.errors import ConfigError, WarpDriveError
from warp_drive.training.run.metrics import read_metrics

if TYPE_CHECKING:
    from matplotlib.figure import Figure

X_KEY = "timestep"
RETURN_SUFFIX = "episode_return_mean"
THROUGHPUT_KEY = "perf/env_steps_per_s"
DEFAULT_PNG_NAME = "learning_curves.png"


def default_keys(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The keys to plot by default: every key of ``rows`` (:func:`read_metrics`'s) ending in
    ``episode_return_mean`` (first-seen order), then ``perf/env_steps_per_s`` when present."""
    seen = list(dict.fromkeys(k for row in rows for k in row))
    keys = [k for k in seen if k.endswith(RETURN_SUFFIX)]
    return keys + ([THROUGHPUT_KEY] if THROUGHPUT_KEY in seen else [])


def make_figure(rows: Sequence[dict[str, Any]], keys: Sequence[str] | None = None) -> Figure:
    """A matplotlib ``Figure`` on an Agg canvas with one subplot per key (default:
    :func:`default_keys`) against ``timestep``: exactly ``len(keys)`` axes.

    Raises:
        ConfigError: matplotlib is missing, no key to plot, or a requested key is absent.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigError(
            "plotting needs matplotlib: pip install matplotlib "
            "(or, from a clone of warp_drive, pip install -e '.[viz]')"
        ) from exc
    available = list(dict.fromkeys(k for row in rows for k in row if k != X_KEY))
    keys = default_keys(rows) if keys is None else list(keys)
    if not keys:
        raise ConfigError(f"no metric to plot: pass keys=...; the rows hold {available}")
    missing = [k for k in keys if k not in available]
    if missing:
        raise ConfigError(f"metric keys {missing} are not in the rows; available: {available}")
    ncols = 1 if len(keys) <= 3 else 2
    nrows = math.ceil(len(keys) / ncols)
    fig = Figure(figsize=(6.0 * ncols, 3.0 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    for i, key in enumerate(keys):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        points = [(r[X_KEY], r[key]) for r in rows if X_KEY in r and r.get(key) is not None]
        xs, ys = zip(*points) if points else ((), ())
        ax.plot(xs, ys, marker="." if len(xs) < 50 else None, linewidth=1.2)
        ax.set_title(key, fontsize=10)
        ax.set_xlabel(X_KEY)
        ax.grid(True, alpha=0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
    return fig


def plot_learning_curves(
    metrics_path: str | Path,
    out_path: str | Path | None = None,
    keys: Sequence[str] | None = None,
) -> Path:
    """Reads a run's metrics (``metrics.jsonl``, ``metrics.csv``, or the run directory holding one)
    and saves its learning curves (:func:`make_figure`) as a PNG; returns its path (default:
    ``learning_curves.png`` next to the metrics file).

    Raises:
        ConfigError: missing/unreadable metrics file, matplotlib missing, or bad ``keys``.
    """
    metrics_path = Path(metrics_path)
    rows = read_metrics(metrics_path)
    if out_path is None:
        run_dir = metrics_path if metrics_path.is_dir() else metrics_path.parent
        out_path = run_dir / DEFAULT_PNG_NAME
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    make_figure(rows, keys).savefig(out_path, format="png", dpi=100)
    return out_path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: plots the curves and prints the PNG path; exit status 0, or 2 on a bad
    metrics file or key."""
    parser = argparse.ArgumentParser(
        prog="python -m warp_drive.training.run.plot",
        description="Plot learning curves of a warp_drive run against timestep.",
    )
    parser.add_argument("metrics", help="metrics.jsonl, metrics.csv, or the run directory")
    parser.add_argument(
        "-o", "--out", default=None, help=f"output PNG (default: {DEFAULT_PNG_NAME} beside metrics)"
    )
    parser.add_argument(
        "--keys",
        nargs="+",
        default=None,
        help=f"metric keys to plot (default: *{RETURN_SUFFIX} and {THROUGHPUT_KEY})",
    )
    args = parser.parse_args(argv)
    try:
        path = plot_learning_curves(args.metrics, args.out, args.keys)
    except WarpDriveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
