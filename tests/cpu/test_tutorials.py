"""The tutorial notebooks run, top to bottom, on the CPU backend.

No Jupyter kernel is needed: the code cells of a notebook are executed in order in one namespace
(``matplotlib`` on the Agg backend, the working directory a fresh temporary folder). Cells tagged
``install`` are skipped, and so are cells tagged ``gpu`` here (the GPU suite,
``tests/gpu/test_gpu_tutorials.py``, runs them). IPython-only lines (``%pip``, ``!torchrun``) become
``pass``. The backend is forced to ``cpu`` even on a machine with a GPU.

The helpers :func:`code_cells` and :func:`execute_notebook` are shared with the GPU suite.
"""

from __future__ import annotations

import json
import linecache
import re
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))
EXPECTED = (
    "01_basics",
    "02_sampler",
    "03_reset_and_log",
    "04_custom_env",
    "05_training",
    "06_scaling_up",
    "07_lightning",
)

#: Optional packages a notebook needs beyond the [dev] extra's; the test skips (saying which) without them.
REQUIREMENTS = {
    "05_training": ("PIL",),
    "07_lightning": ("lightning",),
}

_IPYTHON_LINE = re.compile(r"^(?P<indent>[ \t]*)[!%](?P<rest>.*)$")


def read_notebook(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def cell_tags(cell: dict[str, Any]) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def strip_ipython(source: str) -> str:
    """Turn ``%magic`` and ``!shell`` lines into ``pass`` (same indentation, so blocks stay valid)."""
    out = []
    for line in source.splitlines():
        match = _IPYTHON_LINE.match(line)
        out.append(f"{match.group('indent')}pass  # IPython: {match.group('rest')[:60]}" if match else line)
    return "\n".join(out) + "\n"


def code_cells(path: Path, skip_tags: set[str]) -> Iterator[tuple[int, str]]:
    """``(cell index, Python source)`` of every code cell without a tag in ``skip_tags``."""
    for index, cell in enumerate(read_notebook(path)["cells"]):
        if cell["cell_type"] == "code" and not cell_tags(cell) & skip_tags:
            yield index, strip_ipython(cell_source(cell))


def execute_notebook(path: Path, skip_tags: set[str]) -> tuple[dict[str, Any], list[tuple[int, float]]]:
    """Run the notebook's code cells in order in one fresh namespace.

    Returns:
        The namespace after the last cell and ``[(cell index, seconds)]``.

    Raises:
        AssertionError: a cell failed; the message names the notebook and the cell and shows its
            source, and the original exception is chained.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    namespace: dict[str, Any] = {"__name__": "__main__"}
    timings = []
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")
            for index, source in code_cells(path, skip_tags):
                filename = f"<{path.name} cell {index}>"
                linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
                start = time.perf_counter()
                try:
                    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own notebooks
                except Exception as err:
                    raise AssertionError(f"{path.name}: code cell {index} failed:\n{source}") from err
                timings.append((index, time.perf_counter() - start))
    finally:
        plt.close("all")
    return namespace, timings


@pytest.fixture
def one_torch_thread():
    """The tutorials' models are tiny: one intra-op thread is faster and avoids oversubscription."""
    from tests.helpers.threads import torch_threads

    with torch_threads(1):
        yield


# ----------------------------------------------------------------------------------------- tests
def test_every_tutorial_is_present():
    assert tuple(p.stem for p in NOTEBOOKS) == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_clean_nbformat4(path):
    nb = read_notebook(path)
    assert nb["nbformat"] == 4
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, "commit notebooks without outputs"
    try:
        import nbformat
    except ImportError:
        return
    nbformat.validate(nbformat.reads(path.read_text(encoding="utf-8"), as_version=4))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_opens_with_install_and_backend_cells(path):
    cells = [c for c in read_notebook(path)["cells"] if c["cell_type"] == "code"]
    install, backend = cells[0], cells[1]
    assert cell_tags(install) == {"install"}
    assert '%pip install -q -e "..[cuda' in cell_source(install), "install from the clone the notebook lives in"
    assert 'pip install -e ".[cuda' in cell_source(install), "say how to install from a terminal in the clone"
    assert "warpdrive-marl[" not in cell_source(install), "the package is not on PyPI"
    assert 'BACKEND = "pycuda" if has_cuda_device() else "cpu"' in cell_source(backend)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_gpu_cells_guard_themselves(path):
    """'Run all' on a CPU runtime must not fail: every gpu cell checks the backend first."""
    for cell in read_notebook(path)["cells"]:
        if "gpu" in cell_tags(cell):
            first = next(line for line in cell_source(cell).splitlines() if line and not line.startswith("#"))
            assert first.startswith('if BACKEND == "pycuda"'), cell_source(cell)


def test_notebooks_match_their_sources():
    pytest.importorskip("nbformat")
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_notebooks", TUTORIALS / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stale = [src.name for src in module.sources() if (TUTORIALS / f"{src.stem}.ipynb").read_text() != module.notebook_text(src)]
    assert not stale, f"run `python tutorials/build_notebooks.py`: {stale} changed since the notebooks were built"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_cpu(path, tmp_path, monkeypatch, one_torch_thread, capsys):
    pytest.importorskip("matplotlib")
    for module in REQUIREMENTS.get(path.stem, ()):
        pytest.importorskip(module)
    from warp_drive.utils import device

    monkeypatch.setattr(device, "has_cuda_device", lambda: False)
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    namespace, timings = execute_notebook(path, skip_tags={"install", "gpu"})
    wall = time.perf_counter() - start
    assert namespace["BACKEND"] == "cpu"
    slowest = sorted(timings, key=lambda t: -t[1])[:3]
    with capsys.disabled():
        print(f"\n{path.stem}: {wall:.1f} s on cpu (slowest cells: "
              + ", ".join(f"{i}: {s:.1f} s" for i, s in slowest) + ")")
