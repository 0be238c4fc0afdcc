"""Every 2.7.1 import path listed in warp_drive.compat, and every former path of this project's own
(``MOVED_MODULES``), imports (without pycuda or a GPU) and is a thin re-export: a docstring that
says so, then nothing but imports, aliases and ``__all__``; or an alias path, whose file makes the path the
moved module itself (``alias(__name__, module)``, :func:`warp_drive.compat.alias`). Every former path of a
training module that moved whole (``MOVED_ALIASES``) has no file and imports as the very module of its new path."""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
from pathlib import Path
from unittest import mock

import pytest

from warp_drive.compat import COMPAT_MODULES, MOVED_ALIASES, MOVED_MODULES

ROOT = Path(__file__).resolve().parents[2]


def test_table_is_not_empty():
    assert len(COMPAT_MODULES) >= 10


MARKERS = {**{m: "2.7.1 compatibility path:" for m in COMPAT_MODULES}, **{m: "Former path:" for m in MOVED_MODULES}}


@pytest.mark.parametrize("module", sorted(MARKERS))
def test_compat_module_imports_and_is_thin(module: str) -> None:
    mod = importlib.import_module(module)
    parent, _, _ = module.rpartition(".")  # the path's own file (an alias path's module is another file's)
    spec = importlib.machinery.PathFinder.find_spec(module, importlib.import_module(parent).__path__ if parent else None)
    assert spec is not None and spec.origin, module
    tree = ast.parse(open(spec.origin).read())
    doc = ast.get_docstring(tree) or ""
    assert doc.startswith(MARKERS[module]), f"{module}: docstring must start with {MARKERS[module]!r}"
    for node in tree.body[1:]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            if isinstance(node.value, (ast.Name, ast.Attribute)):
                continue  # alias of an imported name
            if [t.id for t in node.targets] == ["__all__"]:
                continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            continue
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "lazy_exports"):
            continue  # names imported on first use (warp_drive.compat.lazy_exports)
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "alias" and isinstance(node.value.args[1], ast.Name)):
            target = node.value.args[1].id  # the path is this module itself (warp_drive.compat.alias)
            assert mod.__name__ != module and mod.__name__.rsplit(".", 1)[-1] == target, (module, mod.__name__)
            assert importlib.import_module(mod.__name__) is mod
            continue
        pytest.fail(f"{module} line {node.lineno}: a compatibility module holds only imports and re-exports, "
                    f"found {type(node).__name__}")
    public = getattr(mod, "__all__", None)
    if public is not None:
        for name in public:
            assert hasattr(mod, name), f"{module}.__all__ names '{name}', which it does not define"


@pytest.mark.parametrize("old", sorted(MOVED_ALIASES))
def test_a_moved_module_is_the_same_module_at_its_former_path(old: str) -> None:
    new = MOVED_ALIASES[old]
    base = ROOT.joinpath(*old.split("."))
    assert not base.with_suffix(".py").exists() and not base.is_dir(), f"{old}: a file stands at the former path"
    module = importlib.import_module(old)
    assert module is importlib.import_module(new), old
    assert module.__name__ == module.__spec__.name == new, (module.__name__, module.__spec__.name)
    parent, _, leaf = old.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is module  # ``from parent import leaf``


def test_patching_through_a_former_path_reaches_the_module():
    import warp_drive.training.run.metrics as metrics

    with mock.patch("warp_drive.training.metrics.read_metrics", "patched"):
        assert metrics.read_metrics == "patched"
    assert metrics.read_metrics != "patched"
