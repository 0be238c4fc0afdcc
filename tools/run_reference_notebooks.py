"""Run the code cells of WarpDrive 2.7.1's tutorial notebooks, unchanged, against this package.

Each notebook runs in a fresh Python process, its code cells in order in one namespace, as a
Jupyter kernel would (IPython's input transformer handles ``!``/``%`` syntax when IPython is
installed). Cells are classified before they run:

- ``install``: pip / apt / git-clone cells (nothing to install: this package is on the path);
- ``ui``: notebook-UI magics with no effect on the computation (``%load_ext``, ``%tensorboard``);
- ``video``: cells that render an animation to video when no ffmpeg is available;
- ``code``: every other cell; it counts as run when it raises nothing.

A cell that raises is recorded with its error and the run goes on with the next cell, so one
failure does not hide the rest. Results (per notebook: counts and the failures) are written as
JSON. Usage (GPU machine, from the repository root)::

    python tools/run_reference_notebooks.py NOTEBOOK.ipynb [...] --out DIR [--assets DIR]

``--assets`` names a folder holding 2.7.1's published Tag policies; they are placed where the
tutorials load them from (``<project root>/tutorials/assets/tag_continuous_training``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_INSTALL = re.compile(r"(^|\s)(pip3?|apt(-get)?|git)\s+(install|clone)\b|%cd\b|IN_COLAB", re.M)
_UI = re.compile(r"^\s*%(load_ext|tensorboard)\b", re.M)


def classify(source: str, have_ffmpeg: bool) -> str:
    if _INSTALL.search(source):
        return "install"
    if _UI.search(source):
        return "ui"
    if "to_html5_video" in source and not have_ffmpeg:
        return "video"
    return "code"


def _transform(source: str) -> tuple[str, bool]:
    """(python source, capture stdout) of one cell."""
    capture = source.lstrip().startswith("%%capture")
    if capture:
        source = source.lstrip().split("\n", 1)[1] if "\n" in source.lstrip() else ""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source, capture
    return TransformerManager().transform_cell(source), capture


def _install_ipython_shell() -> None:
    """Give transformed ``get_ipython().system(...)`` calls something to run (cells that only run
    shell commands are classified as installs; this covers stray ones)."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:
        return
    InteractiveShell.instance()


def _read_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"]


def _child(path: Path, have_ffmpeg: bool) -> dict:
    _install_ipython_shell()
    namespace: dict = {"__name__": "__main__"}
    cells = [c for c in _read_cells(path) if c.strip()]
    result: dict = {"notebook": path.name, "code_cells": len(cells), "counts": {}, "failures": [], "cells": []}
    counts = {"install": 0, "ui": 0, "video": 0, "code": 0, "code_ok": 0}
    for index, source in enumerate(cells):
        kind = classify(source, have_ffmpeg)
        counts[kind] += 1
        entry = {"index": index, "kind": kind, "first_line": source.strip().splitlines()[0][:100]}
        if kind != "code":
            result["cells"].append(entry)
            continue
        code, capture = _transform(source)
        start = time.perf_counter()
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink) if capture else contextlib.nullcontext():
                exec(compile(code, f"<{path.name} cell {index}>", "exec"), namespace)
            counts["code_ok"] += 1
            entry["ok"] = True
        except BaseException as err:  # noqa: BLE001 - a notebook cell may raise anything
            entry["ok"] = False
            entry["error"] = f"{type(err).__name__}: {err}"[:2000]
            result["failures"].append({"index": index, "source": source[:400],
                                       "traceback": traceback.format_exc()[-3000:]})
            if isinstance(err, KeyboardInterrupt):
                raise
        entry["seconds"] = round(time.perf_counter() - start, 2)
        result["cells"].append(entry)
        print(f"[{path.name}] cell {index} {kind} {'ok' if entry['ok'] else 'FAILED: ' + entry['error'][:300]}"
              f" ({entry['seconds']} s)", flush=True)
    result["counts"] = counts
    return result


def _place_assets(assets: Path | None) -> None:
    if assets is None:
        return
    target = ROOT / "tutorials" / "assets" / "tag_continuous_training"
    target.mkdir(parents=True, exist_ok=True)
    for f in assets.iterdir():
        if f.is_file() and not (target / f.name).exists():
            shutil.copy2(f, target / f.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--assets", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per notebook")
    args = parser.parse_args(argv)
    have_ffmpeg = shutil.which("ffmpeg") is not None
    if args.child:
        (path,) = args.notebooks
        out = _child(path, have_ffmpeg)
        args.out.write_text(json.dumps(out, indent=1))
        return 0
    _place_assets(args.assets)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"ffmpeg": have_ffmpeg, "notebooks": []}
    for nb in args.notebooks:
        work = args.out / (nb.stem + "_cwd")
        work.mkdir(exist_ok=True)
        res_file = args.out / (nb.stem + ".json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(nb.resolve()),
                                   "--out", str(res_file.resolve())], cwd=work, env=env, timeout=args.timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        res = json.loads(res_file.read_text()) if res_file.exists() else {"notebook": nb.name, "crashed": rc}
        res["returncode"] = rc
        res["wall_s"] = round(time.perf_counter() - start, 1)
        summary["notebooks"].append(res)
        c = res.get("counts", {})
        print(f"== {nb.name}: {c.get('code_ok', 0)}/{c.get('code', 0)} code cells ran"
              f" (install cells aside: {c.get('install', 0)}, UI magics: {c.get('ui', 0)}, video without ffmpeg: {c.get('video', 0)})"
              f" in {res['wall_s']} s, rc={rc}", flush=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all(n.get("counts", {}).get("code_ok") == n.get("counts", {}).get("code") and n.get("counts")
                    for n in summary["notebooks"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
