"""The import structure of ``warp_drive/`` and ``example_envs/``: no cycles, no arrow up the layers.

Read from the source (AST), nothing imported. Every import statement counts: top-level,
function-local and ``if TYPE_CHECKING:`` ones alike; relative imports are resolved, and
``from pkg import name`` where ``pkg.name`` is a module of ours imports that module. Calls of
``importlib.import_module`` with a computed name (the lazy package faces) are not followed.

The layers are the table under "Layers, checked" in ``docs/architecture.md``, lowest first: a file
belongs to the row that names it most specifically (a file beats a folder, a deeper folder a
shallower one, a module of a table of ``warp_drive/compat.py`` beats both). A file may import its
own floor and the floors below; an import of a higher floor is an *upward arrow*.

:data:`ALLOWED_CYCLES` and :data:`ALLOWED_UPWARD` list what is still there while issue 25 is under
way, each with the item that removes it. A new cycle or upward arrow fails, and so does an entry
that no longer occurs: the lists only shrink.

The 2.7.1 facade (issue 25 item 2): the re-export modules (the tables of ``warp_drive/compat.py``)
import implementation modules only; no other module imports a re-export path; and the 2.7.1-only
implementation lives in one package, the compat room :data:`COMPAT_ROOM`, imported only by the
re-exports, by itself and by the core modules of :data:`COMPAT_ROOM_IMPORTERS` (an allowlist that
only shrinks).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("warp_drive", "example_envs")
DOC = ROOT / "docs" / "architecture.md"
COMPAT = ROOT / "warp_drive" / "compat.py"
HEADING = "## Layers, checked"
#: The table of ``warp_drive/compat.py`` whose former paths are aliases of moved modules (no file stands there).
ALIAS_TABLE = "MOVED_ALIASES"
#: Project code besides the packages that must not import an alias path either (the tests included).
ALIAS_FREE = ("warp_drive", "example_envs", "tests", "benchmarks", "tools", "examples", "tutorials/src", "docs")

#: Import cycles still present (the files of one cycle) -> the issue-25 item that removes it.
ALLOWED_CYCLES: dict[frozenset[str], str] = {
}

#: Upward arrows still present, (importer, imported) -> the issue-25 item that removes it.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
}

#: The package that holds WarpDrive 2.7.1-only implementation code.
COMPAT_ROOM = "warp_drive/compat271/"

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
    ("warp_drive/utils/env_cpu_gpu_consistency_checker.py", "warp_drive/compat271/data_loader.py"):
        "the CPU-vs-GPU checker (2.7.1's EnvironmentCPUvsGPU) pushes 2.7.1's placeholders for envs written for it",
    ("warp_drive/training/checkpoint_files.py", "warp_drive/compat271/reference_format.py"):
        "policy weight files are written in 2.7.1's parameter names (2.7.1 loads them: a drop-in feature)",
    ("warp_drive/training/models/fully_connected.py", "warp_drive/compat271/reference_format.py"):
        "FullyConnected.load_state_dict accepts 2.7.1's parameter names",
}


# ----------------------------------------------------------------------------- the import graph
def source_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """``{dotted module: repo-relative path}`` of every .py file under ``packages``."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path.relative_to(root).as_posix()
    return out


def _imported_names(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".")[: len(module.split(".")) + (1 if is_package else 0) - node.level]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, dict[str, int]]:
    """``{path: {imported path: first line}}`` over the files of ``packages`` (imports of other
    packages are left out). ``from pkg import a, b`` imports ``pkg.a`` where that is a module of
    ours, else ``pkg`` (its ``__init__.py``); ``import a.b.c`` imports the deepest of ``a.b.c``,
    ``a.b``, ``a`` that is one."""
    modules = source_files(root, packages)
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        is_package = path.endswith("__init__.py")
        edges = graph.setdefault(path, {})
        for node in ast.walk(ast.parse((root / path).read_text(), path)):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = _imported_names(module, is_package, node)
            if isinstance(node, ast.ImportFrom):  # a submodule named, else the package itself
                subs = [n for n in names[1:] if n in modules]
                names = subs if len(subs) == len(names) - 1 else [names[0], *subs]
            for name in names:
                parts = name.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                target = modules.get(".".join(parts)) if parts else None
                if target is not None and target != path:
                    edges.setdefault(target, node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


# ----------------------------------------------------------------------------- the layers of the doc
def compat_tables(path: Path = COMPAT, aliases: bool = False) -> dict[str, list[str]]:
    """The module tables of ``warp_drive/compat.py`` (``NAME: dict[str, str] = {...}``), by name: those of the
    re-export files, or (``aliases``) only :data:`ALIAS_TABLE`, the former paths that have no file."""
    tables = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(node.value, ast.Dict):
            if (node.target.id == ALIAS_TABLE) == aliases:
                tables[node.target.id] = list(ast.literal_eval(node.value))
    return tables


def doc_layers(text: str) -> list[tuple[int, str, list[str]]]:
    """``[(floor, layer name, entries)]`` from the table under :data:`HEADING`, lowest first.

    An entry is a backticked folder (``.../``), file (``.../x.py``) or the name of a table in
    ``warp_drive/compat.py``; the floors run 1, 2, 3, ...
    """
    assert HEADING in text, f"docs/architecture.md has no '{HEADING}' section (the table this test reads)"
    rows = []
    for line in text.split(HEADING, 1)[1].splitlines()[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) == 3 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1], re.findall(r"`([^`]+)`", cells[2])))
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1)), f"floors must run 1, 2, ...: {[r[0] for r in rows]}"
    return rows


def layer_of_files(rows, files: list[str], tables: dict[str, list[str]]) -> tuple[dict[str, int], list[str]]:
    """``({path: floor}, problems)``: each file's floor by its most specific entry."""
    problems = []
    files_set = set(files)
    rank: dict[str, tuple[int, int]] = {}  # path -> (specificity, floor)

    def claim(path: str, specificity: int, floor: int) -> None:
        if specificity > rank.get(path, (-1, 0))[0]:
            rank[path] = (specificity, floor)

    for floor, _, entries in rows:
        for entry in entries:
            if entry in tables:  # a module of a compat table: its file, or every file of its package
                for module in tables[entry]:
                    base = module.replace(".", "/")
                    matched = [f for f in files if f == f"{base}.py" or f.startswith(f"{base}/")]
                    problems += [] if matched else [f"{entry} names {module}, which is no file here"]
                    for f in matched:
                        claim(f, 10_000, floor)
            elif entry.endswith("/"):
                matched = [f for f in files if f.startswith(entry)]
                problems += [] if matched else [f"`{entry}` (floor {floor}) holds no .py file"]
                for f in matched:
                    claim(f, entry.count("/"), floor)
            elif entry.endswith(".py"):
                problems += [] if entry in files_set else [f"`{entry}` (floor {floor}) is no file"]
                claim(entry, 1_000, floor)
            else:
                problems.append(f"`{entry}` (floor {floor}) is neither a folder/, a file.py nor a table of compat.py")
    problems += [f"{f} stands in no layer: name it (or its folder) in the table" for f in files if f not in rank]
    return {f: r[1] for f, r in rank.items()}, problems


def upward_arrows(graph, floors: dict[str, int]) -> dict[tuple[str, str], int]:
    """``{(importer, imported): line}`` where the imported file stands on a higher floor."""
    return {(a, b): line for a, targets in graph.items() for b, line in targets.items()
            if a in floors and b in floors and floors[b] > floors[a]}


@pytest.fixture(scope="module")
def structure():
    graph = import_graph()
    rows = doc_layers(DOC.read_text())
    floors, problems = layer_of_files(rows, sorted(graph), compat_tables())
    return graph, rows, floors, problems


def reexport_files(files: list[str], tables: dict[str, list[str]]) -> set[str]:
    """The files of the modules in the tables of ``warp_drive/compat.py`` (a package: every file in it)."""
    bases = [module.replace(".", "/") for table in tables.values() for module in table]
    return {f for f in files for base in bases if f == f"{base}.py" or f.startswith(f"{base}/")}


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
    new = [f"{a}:{line} (floor {floors[a]}, {names[floors[a]]}) imports {b} (floor {floors[b]}, {names[floors[b]]})"
           for (a, b), line in sorted(found.items()) if (a, b) not in ALLOWED_UPWARD]
    assert not new, ("imports up the layers of docs/architecture.md (move the code down, or the file up in the "
                     "table if the table is wrong; a module kept only for an old path belongs in a table of "
                     "warp_drive/compat.py):\n  " + "\n  ".join(new))
    gone = [pair for pair in ALLOWED_UPWARD if pair not in found]
    assert not gone, f"these allowed upward arrows are gone: delete them from ALLOWED_UPWARD in {Path(__file__).name}: {gone}"


def test_no_module_but_the_re_exports_imports_a_re_export_path(structure):
    """Issue 25 item 2: the 2.7.1 paths (and this project's former ones) are a facade over the
    implementation; no module of ours imports one, whatever the layer table says (no allowlist)."""
    graph, rows, _, _ = structure
    tables = compat_tables()
    assert set(tables) >= {"COMPAT_MODULES", "MOVED_MODULES"}, sorted(tables)
    shims = reexport_files(sorted(graph), tables)
    assert shims, "warp_drive/compat.py's tables name no file"
    top = rows[-1]
    assert set(tables) <= set(top[2]), f"every table of compat.py stands on the top floor ({top[1]}): {top[2]}"
    found = [f"{a}:{line} imports {b}" for a, targets in sorted(graph.items()) if a not in shims
             for b, line in sorted(targets.items()) if b in shims]
    assert not found, ("modules import a re-export path; import the implementation its docstring names "
                       "instead:\n  " + "\n  ".join(found))


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


def test_nothing_imports_a_moved_alias_path():
    """The former paths of modules that moved whole (``MOVED_ALIASES``) are for code outside this project: the
    project's own code, tests included, imports the new paths (the walker above would not see an import of a
    path that has no file, so an arrow through an alias would escape the layer check)."""
    aliases = set(compat_tables(aliases=True)[ALIAS_TABLE])
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
