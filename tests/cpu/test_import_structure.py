"""The import structure of ``warp_drive/`` and ``example_envs/``: no cycles, no arrow up the floors, each
folder on one floor.

The graph and the floors are read from the source by ``tests/helpers/import_structure.py`` (its docstring
says how; ``python tools/folder_graph.py`` prints the folder graph). The floors are the table under
"Layers, checked" in ``docs/architecture.md``; a file may import its own floor and the floors below; an
import of a higher floor is an *upward arrow*. Counted by folder (a subpackage of ``warp_drive``), the only
pairs of folders that import each other are :data:`ALLOWED_TWO_WAY_FOLDERS`, the compat wing's.

:data:`ALLOWED_CYCLES` and :data:`ALLOWED_UPWARD` list what is still there, each with the item that
removes it. A new cycle or upward arrow fails, and so does an entry that no longer occurs: the lists only
shrink.

The 2.7.1 facade (issue 25 item 2): the re-export modules (the tables of ``warp_drive/compat.py``)
import implementation modules only; no other module imports a re-export path; and the 2.7.1-only
implementation lives in one package, the compat wing :data:`COMPAT_ROOM`, imported only by the
re-exports, by itself, by the floors above it and by the core modules of :data:`COMPAT_ROOM_IMPORTERS`
(an allowlist that only shrinks, and the only upward arrows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ast

from tests.helpers.import_structure import (
    ALIAS_TABLE,
    ROOT,
    _imported_names,
    alias_targets,
    compat_tables,
    cycles,
    folder_floors,
    folder_of,
    folder_spans,
    import_graph,
    reexport_files,
    structure_of,
    two_way_pairs,
    upward_arrows,
    upward_folder_arrows,
)

#: Import cycles still present (the files of one cycle) -> the issue-25 item that removes it.
ALLOWED_CYCLES: dict[frozenset[str], str] = {
}

#: Upward arrows still present, (importer, imported) -> the issue-25 item that removes it.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
}

#: The package that holds WarpDrive 2.7.1-only implementation code (the compat wing).
COMPAT_ROOM = "warp_drive/compat271/"

#: The pairs of folders that import each other, each sorted: the compat wing's only. The core modules of
#: :data:`COMPAT_ROOM_IMPORTERS` reach up into it; it builds on them.
ALLOWED_TWO_WAY_FOLDERS: list[tuple[str, str]] = [
    ("warp_drive/compat271/", "warp_drive/cuda/"),
    ("warp_drive/compat271/", "warp_drive/managers/"),
]

#: Folders whose files stand on several floors -> why (the list only shrinks).
FOLDERS_ON_SEVERAL_FLOORS: dict[str, str] = {
    "warp_drive/training/": "its parts, engine, drivers and two Lightning files of the command lines' floor; "
                            "issue 40 move 1's training part gives them folders",
}

#: Folders whose modules still import alias paths (the former paths of moved modules, the same module
#: objects) -> why. Everything else imports the modules by their own paths.
ALIAS_IMPORTERS: dict[str, str] = {
    "warp_drive/training/": "restructured in parallel (issue 40 move 1's training part); it updates its imports",
}

#: Core modules that import the compat room, (importer, room module) -> why. A new pair fails, and so
#: does a pair that no longer occurs: the list only shrinks.
COMPAT_ROOM_IMPORTERS: dict[tuple[str, str], str] = {
    ("warp_drive/cuda/compiler.py", "warp_drive/compat271/kernels.py"):
        "render_source includes compat_271.cuh by the room's rule (the code names a 2.7.1 symbol)",
    ("warp_drive/cuda/check_build.py", "warp_drive/compat271/kernels.py"):
        "marks the builds that hold 2.7.1's kernels",
    ("warp_drive/cuda/check_build.py", "warp_drive/compat271/main_files.py"):
        "builds 2.7.1's shipped self-contained units (cuda_includes/test_build*.cu)",
    ("warp_drive/managers/function_manager.py", "warp_drive/compat271/kernels.py"):
        "initialize_default_functions also loads 2.7.1's kernel names where the module holds them",
    ("warp_drive/managers/cpu_kernels.py", "warp_drive/compat271/cpu_kernels.py"):
        "the NumPy twins of 2.7.1's kernels stay in the CPU backend's kernel table",
    ("warp_drive/managers/pycuda_function_manager.py", "warp_drive/compat271/kernels.py"):
        "which modules hold 2.7.1's kernels; the typed error when one is launched from a module without them",
    ("warp_drive/managers/pycuda_function_manager.py", "warp_drive/compat271/cuda_helpers.py"):
        "compile_and_load_cuda takes 2.7.1's template arguments (refused unless 2.7.1's defaults)",
    ("warp_drive/managers/pycuda_function_manager.py", "warp_drive/compat271/env_barrier.py"):
        "the geometry check of kernels that call 2.7.1's env barrier",
    ("warp_drive/managers/pycuda_function_manager.py", "warp_drive/compat271/main_files.py"):
        "2.7.1's _compile and load_cuda_from_binary_file (main files, binary aliases, shipped test builds)",
    ("warp_drive/testing/consistency.py", "warp_drive/compat271/data_loader.py"):
        "the CPU-vs-GPU checker (2.7.1's EnvironmentCPUvsGPU) pushes 2.7.1's placeholders for envs written for it",
    ("warp_drive/training/checkpoint_files.py", "warp_drive/compat271/reference_format.py"):
        "policy weight files are written in 2.7.1's parameter names (2.7.1 loads them: a drop-in feature)",
    ("warp_drive/training/models/fully_connected.py", "warp_drive/compat271/reference_format.py"):
        "FullyConnected.load_state_dict accepts 2.7.1's parameter names",
}


@pytest.fixture(scope="module")
def structure():
    s = structure_of()
    return s["graph"], s["rows"], s["floors"], s["problems"]


@pytest.fixture(scope="module")
def folders():
    return structure_of()


# ----------------------------------------------------------------------------- the checks
def test_the_walker_sees_every_form_of_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .leaf import x\n")
    (pkg / "sub" / "leaf.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import top\n")
    (pkg / "top.py").write_text("import os\nfrom pkg import sub\nfrom pkg.sub import leaf, nothing\n"
                                "def f():\n    from . import other\n    import pkg.sub.leaf as alias\n")
    (pkg / "other.py").write_text("from .sub.leaf import x\nfrom .. import pkg\n'import pkg.top'\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg/top.py"] == {"pkg/sub/__init__.py": 2, "pkg/sub/leaf.py": 3, "pkg/other.py": 5}
    assert graph["pkg/sub/__init__.py"] == {"pkg/sub/leaf.py": 1}
    assert graph["pkg/sub/leaf.py"] == {"pkg/top.py": 3}  # under TYPE_CHECKING: still an arrow
    assert graph["pkg/other.py"] == {"pkg/sub/leaf.py": 1}  # `from .. import pkg` leaves the package
    assert sorted(map(sorted, cycles(graph))) == [["pkg/other.py", "pkg/sub/__init__.py", "pkg/sub/leaf.py", "pkg/top.py"]]


def test_the_layer_table_is_well_formed_and_places_every_file(structure):
    _, rows, _, problems = structure
    assert len(rows) >= 5, rows
    assert not problems, "docs/architecture.md's layer table and the tree disagree:\n  " + "\n  ".join(problems)


def test_no_import_cycle_but_the_allowed_ones(structure):
    graph = structure[0]
    found = set(cycles(graph))
    new = [sorted(c) for c in found if c not in ALLOWED_CYCLES]
    detail = [f"{a} -> {b} (line {graph[a][b]})" for c in new for a in sorted(c) for b in sorted(graph[a]) if b in c]
    assert not new, ("import cycles (break them: move what both need to a lower module; a function-local import "
                     "is still an arrow):\n  " + "\n  ".join(detail))
    gone = [sorted(c) for c in ALLOWED_CYCLES if c not in found]
    assert not gone, f"these allowed cycles are gone: delete them from ALLOWED_CYCLES in {Path(__file__).name}: {gone}"


def test_no_upward_arrow_but_the_allowed_ones(structure):
    graph, rows, floors, problems = structure
    if problems:
        pytest.skip("the layer table does not place every file (see the test above)")
    names = {floor: name for floor, name, _ in rows}
    found = upward_arrows(graph, floors)
    wing = {pair for pair in COMPAT_ROOM_IMPORTERS if pair in found}  # core modules reaching up into the compat wing
    new = [f"{a}:{line} (floor {floors[a]}, {names[floors[a]]}) imports {b} (floor {floors[b]}, {names[floors[b]]})"
           for (a, b), line in sorted(found.items()) if (a, b) not in ALLOWED_UPWARD and (a, b) not in wing]
    assert not new, ("imports up the layers of docs/architecture.md (move the code down, or the file up in the "
                     "table if the table is wrong; a module kept only for an old path belongs in a table of "
                     "warp_drive/compat.py):\n  " + "\n  ".join(new))
    gone = [pair for pair in ALLOWED_UPWARD if pair not in found]
    assert not gone, f"these allowed upward arrows are gone: delete them from ALLOWED_UPWARD in {Path(__file__).name}: {gone}"


def test_no_module_but_the_re_exports_imports_a_re_export_path(structure):
    """Issue 25 item 2: the 2.7.1 paths (and this project's former ones) are a facade over the
    implementation; no module of ours imports one, whatever the layer table says, but the folders of
    :data:`ALIAS_IMPORTERS` importing alias paths (the same module objects)."""
    _, rows, _, _ = structure
    graph = import_graph(follow_aliases=False)
    tables = compat_tables()
    assert set(tables) >= {"COMPAT_MODULES", "MOVED_MODULES"}, sorted(tables)
    shims = reexport_files(sorted(graph), tables)
    assert shims, "warp_drive/compat.py's tables name no file"
    top = rows[-1]
    assert set(tables) <= set(top[2]), f"every table of compat.py stands on the top floor ({top[1]}): {top[2]}"
    aliases = alias_targets()
    assert set(aliases) <= shims, f"alias paths outside compat.py's tables: {sorted(set(aliases) - shims)}"
    pending = {(a, b) for a, targets in graph.items() if a not in shims for b in targets
               if b in aliases and any(a.startswith(folder) for folder in ALIAS_IMPORTERS)}
    found = [f"{a}:{line} imports {b}" for a, targets in sorted(graph.items()) if a not in shims
             for b, line in sorted(targets.items()) if b in shims and (a, b) not in pending]
    assert not found, ("modules import a re-export path; import the implementation its docstring names "
                       "instead:\n  " + "\n  ".join(found))
    gone = [folder for folder in ALIAS_IMPORTERS if not any(a.startswith(folder) for a, _ in pending)]
    assert not gone, f"these folders import no alias path any more: delete them from ALIAS_IMPORTERS: {gone}"


def test_each_alias_is_the_module_it_names():
    """An alias path and its module are one object (monkeypatching either reaches the code)."""
    import importlib

    for path, target in alias_targets().items():
        old, new = (p.removesuffix(".py").replace("/", ".") for p in (path, target))
        assert importlib.import_module(old) is importlib.import_module(new.removesuffix(".__init__")), (old, new)


def test_re_exports_point_only_at_implementation_modules(structure):
    """A re-export imports the implementation its docstring names, never another re-export path."""
    graph = structure[0]
    shims = reexport_files(sorted(graph), compat_tables())
    found = [f"{a}:{line} imports {b}" for a in sorted(shims) for b, line in sorted(graph[a].items()) if b in shims]
    assert not found, "re-exports import re-exports; import the implementation instead:\n  " + "\n  ".join(found)


def test_the_compat_room_is_imported_only_by_the_re_exports_and_the_allowed_modules(structure):
    graph = structure[0]
    assert any(f.startswith(COMPAT_ROOM) for f in graph), f"{COMPAT_ROOM} holds no module"
    shims = reexport_files(sorted(graph), compat_tables())
    found = {(a, b): line for a, targets in graph.items() if a not in shims and not a.startswith(COMPAT_ROOM)
             for b, line in targets.items() if b.startswith(COMPAT_ROOM)}
    new = [f"{a}:{line} imports {b}" for (a, b), line in sorted(found.items()) if (a, b) not in COMPAT_ROOM_IMPORTERS]
    assert not new, (f"core modules import the 2.7.1 compat room {COMPAT_ROOM} (2.7.1-only code is reached through "
                     "its re-export paths; core code does not depend on it):\n  " + "\n  ".join(new))
    gone = [pair for pair in COMPAT_ROOM_IMPORTERS if pair not in found]
    assert not gone, f"these allowed imports of the compat room are gone: delete them from COMPAT_ROOM_IMPORTERS: {gone}"


# ----------------------------------------------------------------------------- the folders
def _ours(edges):
    return {pair: found for pair, found in edges.items() if all(f.startswith("warp_drive/") for f in pair)}


def test_one_row_per_folder_and_each_folder_on_one_floor(folders):
    rows, shims = folders["rows"], folders["shims"]
    named = [entry for _, _, entries in rows for entry in entries if entry.endswith("/")]
    tops = sorted({folder_of(f) for f in folders["graph"] if f not in shims})
    assert sorted(e for e in named if e in tops) == tops, f"name each folder in exactly one row: {tops} vs {named}"
    crowded = [(floor, name) for floor, name, entries in rows if len([e for e in entries if e.endswith("/")]) > 1]
    assert not crowded, f"rows that name several folders: {crowded}"
    several = {f: found for f, found in folder_spans(folders["floors"], shims).items() if len(found) > 1}
    new = {f: found for f, found in several.items() if f not in FOLDERS_ON_SEVERAL_FLOORS}
    assert not new, f"folders whose files stand on several floors (move the files, so the folder says the floor): {new}"
    gone = [f for f in FOLDERS_ON_SEVERAL_FLOORS if f not in several]
    assert not gone, f"these folders stand on one floor now: delete them from FOLDERS_ON_SEVERAL_FLOORS: {gone}"


def test_the_only_folders_that_import_each_other_are_the_compat_wings(folders):
    edges = _ours(folders["folder_edges"])
    found = two_way_pairs(edges)
    detail = [f"{a}:{line} -> {b}" for x, y in found if (x, y) not in ALLOWED_TWO_WAY_FOLDERS
              for pair in ((x, y), (y, x)) for (a, b), line in sorted(edges[pair].items())]
    assert found == sorted(ALLOWED_TWO_WAY_FOLDERS), ("pairs of folders that import each other (python "
                                                      "tools/folder_graph.py --files):\n  " + "\n  ".join(detail))


def test_no_folder_imports_a_higher_floor_but_into_the_compat_wing(folders):
    up = upward_folder_arrows(_ours(folders["folder_edges"]), folders["folder_floors"])
    bad = [f"{a}:{line} -> {b}" for pair, found in sorted(up.items()) for (a, b), line in sorted(found.items())
           if (a, b) not in COMPAT_ROOM_IMPORTERS]
    assert not bad, "imports of a folder on a higher floor:\n  " + "\n  ".join(bad)
    assert sorted(up) == sorted((y, x) for x, y in ALLOWED_TWO_WAY_FOLDERS), sorted(up)


def test_nothing_imports_a_moved_alias_path():
    """The former paths of modules that moved whole (``MOVED_ALIASES``) are for code outside this project: the
    project's own code, tests included, imports the new paths (the walker above would not see an import of a
    path that has no file, so an arrow through an alias would escape the layer check)."""
    aliases = set(compat_tables(aliases=True)[ALIAS_TABLE])
    ALIAS_FREE = ("warp_drive", "example_envs", "tests", "benchmarks", "tools", "examples", "tutorials/src", "docs")
    assert aliases, f"warp_drive/compat.py has no {ALIAS_TABLE}"
    found = []
    for folder in ALIAS_FREE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            module = rel[:-3].replace("/", ".").removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = _imported_names(module, path.name == "__init__.py", node)
                    found += [f"{rel}:{node.lineno} imports {n}" for n in names if n in aliases]
    assert not found, "imports of former paths (import the module's new path, MOVED_ALIASES's value):\n  " + "\n  ".join(found)


def training_folder(path: str) -> str:
    """``warp_drive/training/<folder>`` of a file under it, or ``warp_drive/training`` for its flat modules."""
    parts = path.split("/")
    return "/".join(parts[:3]) if len(parts) > 3 else "/".join(parts[:2])


def test_no_two_folders_of_training_import_each_other(structure):
    """Issue 38: engine, run, algorithms, models, ... are floors, not a web: no two folders of ``warp_drive/training/``
    (its flat modules counted as one) import each other, re-exports left out. Models import no algorithm: a model's
    parts (head outputs, the observation normalizer) live in ``models/``."""
    graph = structure[0]
    shims = reexport_files(sorted(graph), compat_tables())
    arrows: dict[tuple[str, str], str] = {}
    for a, targets in graph.items():
        if not a.startswith("warp_drive/training/") or a in shims:
            continue
        for b, line in targets.items():
            if b.startswith("warp_drive/training/") and b not in shims and training_folder(a) != training_folder(b):
                arrows.setdefault((training_folder(a), training_folder(b)), f"{a}:{line} imports {b}")
    both = sorted(f"{arrows[(x, y)]}  <->  {arrows[(y, x)]}" for x, y in arrows if (y, x) in arrows and x < y)
    assert not both, "folders of warp_drive/training/ that import each other:\n  " + "\n  ".join(both)
