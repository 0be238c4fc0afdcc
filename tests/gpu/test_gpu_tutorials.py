"""The tutorial notebooks run with every cell, GPU-only cells included, on the pycuda backend.

Each notebook's wall time is printed and, when ``$OUT`` is set, collected in
``$OUT/tutorial_times.json`` (``{notebook: {"wall_s": ..., "slowest_cells": [[index, s], ...]}}``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.cpu.test_tutorials import NOTEBOOKS, REQUIREMENTS, execute_notebook

pytestmark = pytest.mark.gpu


def _record(name: str, wall: float, timings: list[tuple[int, float]]) -> None:
    out = os.environ.get("OUT")
    if not out:
        return
    path = Path(out) / "tutorial_times.json"
    times = json.loads(path.read_text()) if path.is_file() else {}
    slowest = sorted(timings, key=lambda t: -t[1])[:5]
    times[name] = {"wall_s": round(wall, 2), "slowest_cells": [[i, round(s, 2)] for i, s in slowest]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(times, indent=2, sort_keys=True))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_gpu(path, tmp_path, monkeypatch, capsys):
    pytest.importorskip("pycuda.driver")
    for module in REQUIREMENTS.get(path.stem, ()):
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    namespace, timings = execute_notebook(path, skip_tags={"install"})
    wall = time.perf_counter() - start
    assert namespace["BACKEND"] == "pycuda", "the gpu cells did not run: has_cuda_device() returned False"
    _record(path.stem, wall, timings)
    slowest = sorted(timings, key=lambda t: -t[1])[:3]
    with capsys.disabled():
        print(f"\n{path.stem}: {wall:.1f} s on the GPU (slowest cells: "
              + ", ".join(f"{i}: {s:.1f} s" for i, s in slowest) + ")")
