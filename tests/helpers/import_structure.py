"""The import structure of ``warp_drive/`` and ``example_envs/``, read from the source (AST), nothing imported.

Used by ``tests/cpu/test_import_structure.py`` (the checks) and ``tools/folder_graph.py`` (prints the folder
graph). Every import statement counts: top-level, function-local and ``if TYPE_CHECKING:`` ones alike;
relative imports are resolved, and ``from pkg import name`` where ``pkg.name`` is a module of ours imports
that module. Calls of ``importlib.import_module`` with a computed name (the lazy package faces) are not
followed. An import of a former path that is an *alias* (its file calls :func:`warp_drive.compat.alias`:
the path is the moved module itself) is an import of the module it names.

Floors come from the table under "Layers, checked" in ``docs/architecture.md``, lowest first: a file
belongs to the row that names it most specifically (a file beats a folder, a deeper folder a shallower
one, a module of a table of ``warp_drive/compat.py`` beats both). A *folder* is a subpackage of
``warp_drive`` (``warp_drive/cuda/``), ``warp_drive/`` itself for its top-level files, or a whole other
package (``example_envs/``); a folder stands on the floor of the row that names it (else on its
files' lowest).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("warp_drive", "example_envs")
DOC = Path("docs") / "architecture.md"
COMPAT = Path("warp_drive") / "compat.py"
HEADING = "## Layers, checked"


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


def alias_targets(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """``{path of a former path's file: path of the module it is}`` for every file whose top level calls
    ``alias(__name__, name)`` (:func:`warp_drive.compat.alias`), ``name`` bound by an import in that file."""
    modules = source_files(root, packages)
    out = {}
    for module, path in modules.items():
        tree = ast.parse((root / path).read_text(), path)
        calls = [n.value for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
                 and getattr(n.value.func, "id", None) == "alias" and len(n.value.args) == 2
                 and isinstance(n.value.args[1], ast.Name)]
        if not calls:
            continue
        bound = {}  # name -> the module an import binds it to: `from pkg import name`, `import pkg.mod as name`
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                base = _imported_names(module, path.endswith("__init__.py"), node)[0]
                bound.update({a.asname or a.name: f"{base}.{a.name}" for a in node.names})
            elif isinstance(node, ast.Import):
                bound.update({a.asname: a.name for a in node.names if a.asname})
        target = bound.get(calls[0].args[1].id)
        assert target in modules, f"{path}: alias(__name__, {calls[0].args[1].id}) names no module of ours ({target})"
        out[path] = modules[target]
    return out


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES, follow_aliases: bool = True) -> dict[str, dict[str, int]]:
    """``{path: {imported path: first line}}`` over the files of ``packages`` (imports of other
    packages are left out). ``from pkg import a, b`` imports ``pkg.a`` where that is a module of
    ours, else ``pkg`` (its ``__init__.py``); ``import a.b.c`` imports the deepest of ``a.b.c``,
    ``a.b``, ``a`` that is one. With ``follow_aliases``, an import of an alias path's file is an import
    of the module it is (:func:`alias_targets`)."""
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
    if follow_aliases:
        aliases = alias_targets(root, packages)
        followed: dict[str, dict[str, int]] = {}
        for a, targets in graph.items():
            edges = followed.setdefault(a, {})
            for b, line in sorted(targets.items(), key=lambda item: item[1]):
                edges.setdefault(b if a in aliases else aliases.get(b, b), line)
        graph = followed
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
#: The table of ``warp_drive/compat.py`` whose former paths are aliases of moved training modules (no file stands
#: there: an import finder maps them, :func:`warp_drive.compat.install_moved_aliases`).
ALIAS_TABLE = "MOVED_ALIASES"


def compat_tables(path: Path = ROOT / COMPAT, aliases: bool = False) -> dict[str, list[str]]:
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



def reexport_files(files: list[str], tables: dict[str, list[str]]) -> set[str]:
    """The files of the modules in the tables of ``warp_drive/compat.py`` (a package: every file in it)."""
    bases = [module.replace(".", "/") for table in tables.values() for module in table]
    return {f for f in files for base in bases if f == f"{base}.py" or f.startswith(f"{base}/")}


# ----------------------------------------------------------------------------- the folders
def folder_of(path: str) -> str:
    """``warp_drive/<sub>/`` for a file of a subpackage of warp_drive, ``warp_drive/`` for a top-level file,
    ``<package>/`` for a file of another package."""
    parts = path.split("/")
    return f"{parts[0]}/{parts[1]}/" if parts[0] == "warp_drive" and len(parts) > 2 else f"{parts[0]}/"


def folder_edges(graph, skip: set[str]) -> dict[tuple[str, str], dict[tuple[str, str], int]]:
    """``{(folder, imported folder): {(importer, imported): line}}``, importers in ``skip`` (the re-exports
    of the compat tables) left out, and imports inside a folder too."""
    out: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    for a, targets in graph.items():
        if a in skip:
            continue
        for b, line in targets.items():
            if folder_of(a) != folder_of(b):
                out.setdefault((folder_of(a), folder_of(b)), {})[(a, b)] = line
    return out


def two_way_pairs(edges) -> list[tuple[str, str]]:
    """The pairs of folders that import each other, each sorted, sorted."""
    return sorted({tuple(sorted(pair)) for pair in edges if (pair[1], pair[0]) in edges})


def folder_floors(rows, floors: dict[str, int], skip: set[str]) -> dict[str, int]:
    """``{folder: floor}``: the floor of the row that names the folder, else the lowest of its files'."""
    named = {entry: floor for floor, _, entries in rows for entry in entries}
    out: dict[str, int] = {}
    for path, floor in floors.items():
        if path not in skip:
            folder = folder_of(path)
            out[folder] = named.get(folder, min(floor, out.get(folder, floor)))
    return out


def folder_spans(floors: dict[str, int], skip: set[str]) -> dict[str, list[int]]:
    """``{folder: the floors its files stand on}`` (re-exports left out)."""
    out: dict[str, set[int]] = {}
    for path, floor in floors.items():
        if path not in skip:
            out.setdefault(folder_of(path), set()).add(floor)
    return {folder: sorted(found) for folder, found in sorted(out.items())}


def upward_folder_arrows(edges, ffloors: dict[str, int]) -> dict[tuple[str, str], dict[tuple[str, str], int]]:
    """The folder arrows that point at a folder on a higher floor."""
    return {pair: found for pair, found in edges.items() if ffloors.get(pair[1], 0) > ffloors.get(pair[0], 0)}


def structure_of(root: Path = ROOT) -> dict:
    """Everything the checks and the tool read, for the tree at ``root``."""
    graph = import_graph(root)
    rows = doc_layers((root / DOC).read_text())
    tables = compat_tables(root / COMPAT)
    floors, problems = layer_of_files(rows, sorted(graph), tables)
    shims = reexport_files(sorted(graph), tables)
    edges = folder_edges(graph, shims)
    ffloors = folder_floors(rows, floors, shims)
    return {"graph": graph, "rows": rows, "tables": tables, "floors": floors, "problems": problems, "shims": shims,
            "folder_edges": edges, "folder_floors": ffloors}
