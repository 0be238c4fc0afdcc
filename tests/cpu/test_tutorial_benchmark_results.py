"""Tutorial 06 finds the committed benchmark results in a clone (issue 26, item 6b).

Its results cell walks up from the working directory to the clone's ``benchmarks/results`` (a
clone with the package installed non-editable into site-packages, the case that printed "no
benchmark results here"), falls back to the folder next to the package (editable installs), and
says where it looked when there are none."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pytest

import warp_drive

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "tutorials" / "06_scaling_up.ipynb"
RESULTS = ROOT / "benchmarks" / "results"


def results_cell() -> str:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    (source,) = [s for s in sources if "def find_benchmark_results" in s]
    return source


def run_cell(cwd: Path, package_file: Path | None, monkeypatch, capsys) -> tuple[dict, str, int]:
    """Run the cell in ``cwd`` with ``warp_drive`` imported from ``package_file`` (default: this
    checkout); return its namespace, what it printed and how many figures it drew."""
    monkeypatch.chdir(cwd)
    if package_file is not None:
        monkeypatch.setattr(warp_drive, "__file__", str(package_file))
    plt.close("all")
    namespace = {"plt": plt}
    exec(compile(results_cell(), str(NOTEBOOK), "exec"), namespace)  # noqa: S102 - the tutorial's own code
    figures = len(plt.get_fignums())
    plt.close("all")
    return namespace, capsys.readouterr().out, figures


@pytest.fixture()
def site_packages(tmp_path: Path) -> Path:
    """A non-editable install: the package in a site-packages folder outside the clone."""
    package = tmp_path / "venv" / "lib" / "site-packages" / "warp_drive"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    return package / "__init__.py"


@pytest.mark.parametrize("where", ["tutorials", "tutorials/src", "."])
def test_a_clone_finds_its_results_with_the_package_installed_elsewhere(where, site_packages, monkeypatch, capsys):
    expected = len(sorted(RESULTS.glob("env_step_*.json")))
    assert expected, "the clone has committed env_step results"
    ns, out, figures = run_cell(ROOT / where, site_packages, monkeypatch, capsys)
    assert ns["results"] == RESULTS and "no benchmark results" not in out
    assert figures == expected


def test_outside_a_clone_it_says_where_it_looked(tmp_path, site_packages, monkeypatch, capsys):
    ns, out, figures = run_cell(tmp_path, site_packages, monkeypatch, capsys)
    assert ns["results"] is None and figures == 0
    assert out.startswith("no benchmark results found: no benchmarks/results folder in ")
    assert str(tmp_path.resolve()) in out and str(site_packages.parent) in out and "inside a clone" in out


def test_an_editable_install_finds_them_from_anywhere(tmp_path, monkeypatch, capsys):
    ns, out, figures = run_cell(tmp_path, None, monkeypatch, capsys)  # the package of this checkout
    assert ns["results"] == RESULTS and figures > 0


def test_an_empty_results_folder_is_named(tmp_path, site_packages, monkeypatch, capsys):
    (tmp_path / "clone" / "benchmarks" / "results").mkdir(parents=True)
    ns, out, figures = run_cell(tmp_path / "clone", site_packages, monkeypatch, capsys)
    assert figures == 0 and "holds no env_step_*.json results" in out
