"""The API reference covers every public module, and its pages are in the navigation.

The full build (``python -m sphinx -W --keep-going -b html docs docs/_build/html``) runs in
``.ci/run``; these tests check its inputs without Sphinx: ``docs/apigen.py`` lists every public
module of the installed packages (as setup.py finds them), writes one page per module reachable
from the API index, every documented module imports (autodoc imports each one), and the entry
page's navigation holds the guides and the API index.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDES = ["architecture", "adding_an_env", "config_reference", "migrating_from_warpdrive", "results", "peers/jaxmarl_simple_spread"]


def _apigen():
    spec = importlib.util.spec_from_file_location("docs_apigen", DOCS / "apigen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _installed_public_modules() -> set[str]:
    """Public modules of the packages setup.py installs (its own find_packages call), less the Numba
    kernel modules (apigen.is_numba_kernel_module: they import numba and a per-run env_config)."""
    names = set()
    for package in find_packages(str(ROOT), include=["warp_drive", "warp_drive.*", "example_envs", "example_envs.*"]):
        parts = package.split(".")
        if any(part.startswith("_") for part in parts):
            continue
        names.add(package)
        for path in (ROOT / Path(*parts)).glob("*.py"):
            if not path.name.startswith("_"):
                names.add(f"{package}.{path.stem}")
    return {n for n in names if not _apigen().is_numba_kernel_module(n)}


def _toctree_entries(text: str) -> list[str]:
    """Entries of the ``toctree`` directives of a reST or MyST page."""
    entries = []
    bodies = re.findall(r"```\{toctree\}\n(.*?)```", text, re.S)  # MyST
    bodies += re.findall(r"^\.\. toctree::\n((?:[ \t]+.*\n|\n)*)", text, re.M)  # reST: the indented block
    for body in bodies:
        for line in body.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                entries.append(line)
    return entries


def test_every_public_module_has_an_api_page(tmp_path):
    apigen = _apigen()
    modules = apigen.public_modules()
    expected = _installed_public_modules()
    assert set(modules) == expected, (
        f"missing from the API reference: {sorted(expected - set(modules))}; "
        f"not installed by setup.py: {sorted(set(modules) - expected)}")
    assert "warp_drive" in modules and "example_envs" in modules and "warp_drive.env.env_wrapper" in modules
    assert not [m for m in modules if any(part.startswith("_") for part in m.split("."))]

    written = apigen.write_api_pages(tmp_path)
    assert written == modules
    pages = {p.stem for p in tmp_path.glob("*.rst")}
    assert pages == set(modules) | {"index"}
    for name in modules:
        text = (tmp_path / f"{name}.rst").read_text()
        assert f".. automodule:: {name}\n" in text and "   :members:" in text

    # every page is reached from the API index through the package pages' toctrees
    reached, todo = set(), ["index"]
    while todo:
        page = todo.pop()
        for entry in _toctree_entries((tmp_path / f"{page}.rst").read_text()):
            assert (tmp_path / f"{entry}.rst").is_file(), f"{page}.rst lists {entry}, which has no page"
            if entry not in reached:
                reached.add(entry)
                todo.append(entry)
    assert reached == set(modules)

    # a page of a module that is gone is removed on the next build
    (tmp_path / "warp_drive.gone.rst").write_text("stale")
    apigen.write_api_pages(tmp_path)
    assert not (tmp_path / "warp_drive.gone.rst").exists()


def test_entry_page_navigates_to_the_guides_and_the_api():
    entries = _toctree_entries((DOCS / "index.md").read_text())
    assert entries == [*GUIDES, "api/index"]
    for guide in GUIDES:
        assert (DOCS / f"{guide}.md").is_file()
    conf = (DOCS / "conf.py").read_text()
    assert "myst_parser" in conf and "sphinx.ext.autodoc" in conf and "sphinx.ext.napoleon" in conf
    assert "apigen.write_api_pages" in conf


def test_every_documented_module_imports():
    """autodoc imports each module; one that fails to import is a warning, so the -W build fails.
    pycuda is not installed in CI: no module may need it at import time."""
    modules = _apigen().public_modules()
    code = (
        "import importlib, sys\n"
        "sys.modules['pycuda'] = None  # as without pycuda\n"
        "failed = []\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except BaseException as exc:\n"
        "        failed.append(f'{name}: {exc!r}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"modules that do not import:\n{res.stdout}\n{res.stderr[-3000:]}"


def test_docs_extra_ci_and_readme_agree():
    command = "python -m sphinx -W --keep-going -b html docs docs/_build/html"
    setup = (ROOT / "setup.py").read_text()
    assert re.search(r'"docs": \[[^\]]*"sphinx>=[\d.]+"[^\]]*"myst-parser>=[\d.]+"', setup)
    ci = (ROOT / ".ci" / "run").read_text()
    assert '".[docs]"' in ci and command in ci
    readme = (ROOT / "README.md").read_text()
    assert command in readme and "docs/_build/html/index.html" in readme
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "docs/_build/" in ignored and "docs/api/" in ignored
