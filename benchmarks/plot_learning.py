"""Plots of ``learning_side_by_side.py``'s results (CPU, matplotlib): the cross-play heatmap and the
learning curves of both frameworks against wall-clock, each snapshot scored against the published
1e9-step policies. ``python benchmarks/learning_side_by_side.py plot`` calls :func:`plot_all`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _published_level(doc: dict) -> float:
    return doc["crossplay"]["published-1e9 | published-1e9"]["mean"]


def heatmap(doc: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = doc["sources"]
    grid = np.array([[doc["crossplay"][f"{t} | {r}"]["mean"] for r in sources] for t in sources]) * 100
    half = np.array([[doc["crossplay"][f"{t} | {r}"]["ci95"] for r in sources] for t in sources]) * 100
    fig, ax = plt.subplots(figsize=(8.2, 6.6))
    im = ax.imshow(grid, cmap="RdYlBu_r", vmin=0, vmax=100)
    for i in range(len(sources)):
        for j in range(len(sources)):
            ax.text(j, i, f"{grid[i, j]:.1f}\n±{half[i, j]:.1f}", ha="center", va="center", fontsize=8,
                    color="white" if grid[i, j] > 80 or grid[i, j] < 20 else "black")
    ax.set_xticks(range(len(sources)), sources, rotation=30, ha="right")
    ax.set_yticks(range(len(sources)), sources)
    ax.set_xlabel("runners")
    ax.set_ylabel("taggers")
    n = doc["eval"]
    ax.set_title(f"Runners tagged (%), Tag continuous, published config\n{n['num_envs']} envs x "
                 f"{n['episodes_per_env']} episodes, sampled actions, mean ± 95% interval")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def curves(doc: dict, path: Path, extra_runs: dict[str, dict] | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {"ours": doc["ours"], "reference (2.7.1)": doc["reference"], **(extra_runs or {})}
    level = _published_level(doc) * 100
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    keys = (("taggers_vs_published_runners", "their taggers vs published runners\n(higher: better taggers)"),
            ("published_taggers_vs_runners", "published taggers vs their runners\n(lower: better runners)"))
    styles = {"ours": ("C0", "-"), "reference (2.7.1)": ("C3", "-")}
    for ax, (key, title) in zip(axes, keys):
        for name, run in runs.items():
            color, ls = styles.get(name, ("C0", ":"))
            x = [row["elapsed_s"] for row in run["curve"]]
            y = np.array([row[key]["mean"] for row in run["curve"]]) * 100
            e = np.array([row[key]["ci95"] for row in run["curve"]]) * 100
            ax.errorbar(x, y, yerr=e, color=color, ls=ls, marker="o", ms=3, capsize=2, label=name)
        ax.axhline(level, color="k", ls="--", lw=1, label="published vs published (1e9 steps)")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training wall-clock (s); GPUs in the README")
        ax.set_ylabel("runners tagged (%)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_all(results: Path) -> list[Path]:
    """Plots the newest ``learning_side_by_side_<GPU>.json`` in ``results`` into
    ``learning_{crossplay,curves}_<GPU>.png`` beside it."""
    found = sorted(results.glob("learning_side_by_side_*.json"), key=lambda f: f.stat().st_mtime)
    if not found:
        raise SystemExit(f"no learning_side_by_side_*.json in {results}: run the two training commands first")
    gpu = found[-1].stem[len("learning_side_by_side_"):]
    doc = json.loads(found[-1].read_text())
    extra = {}
    for f in sorted((results / "side_by_side").glob("ours_run*.json")):
        extra[f"ours, earlier run ({f.stem.split('_')[-1]})"] = json.loads(f.read_text())
    return [heatmap(doc, results / f"learning_crossplay_{gpu}.png"),
            curves(doc, results / f"learning_curves_{gpu}.png", extra)]
