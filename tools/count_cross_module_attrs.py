"""Count attribute reads and writes made on the trainer/engine object from other modules.

Reads the Python files of ``warp_drive/training/`` (or ``--root``) with :mod:`ast` and counts, in
every module that does not define the trainer/engine classes (:data:`ENGINE_CLASSES`), the
attributes used on a reference to the trainer or engine object:

* a reference is ``trainer``, ``engine``, ``self.trainer``, ``self._trainer``, ``self.engine``,
  ``self._engine``, ``self.t`` or ``<anything>.engine`` (e.g. ``pl_module.engine``), or a name or
  ``self.<attr>`` assigned from a reference (``t = self.t``, ``self.t = trainer``);
* under ``lightning/`` the names ``trainer``, ``self.trainer`` and ``self._trainer`` are
  Lightning's own Trainer and are not references (the engine is ``engine`` / ``self.engine``);
* a **write** is an assignment, augmented assignment or ``del`` whose target is an attribute of a
  reference, or an item or attribute below one (``trainer.perf["steps"] = ...``);
* a **read** is any other use of an attribute of a reference, except calling it: method calls
  (``engine.collect()``) are the object's API, not its internals.

Usage::

    python tools/count_cross_module_attrs.py                 # totals and a per-module table
    python tools/count_cross_module_attrs.py --json          # {"reads": n, "writes": n, "modules": {...}}
    python tools/count_cross_module_attrs.py --root /tmp/base/warp_drive/training
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PACKAGE = ROOT / "warp_drive" / "training"

#: Classes of the trainer/engine object: the modules defining them are not counted.
ENGINE_CLASSES = frozenset({"Trainer", "TrainerDDPG", "Engine", "EngineBase"})
#: Names that refer to the trainer/engine object (outside ``lightning/``: also the ``TRAINER_NAMES``).
ENGINE_NAMES = frozenset({"engine"})
TRAINER_NAMES = frozenset({"trainer"})
#: ``self.<attr>`` that refer to it (outside ``lightning/``: also the trainer ones).
ENGINE_SELF_ATTRS = frozenset({"engine", "_engine", "t"})
TRAINER_SELF_ATTRS = frozenset({"trainer", "_trainer"})


@dataclass
class Counts:
    reads: int = 0
    writes: int = 0
    read_names: dict[str, int] = field(default_factory=dict)
    write_names: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, name: str) -> None:
        names = self.read_names if kind == "read" else self.write_names
        names[name] = names.get(name, 0) + 1
        if kind == "read":
            self.reads += 1
        else:
            self.writes += 1


class _ModuleCounter(ast.NodeVisitor):
    """Counts one module; aliases are tracked per function and per class (``self.<attr>``)."""

    def __init__(self, lightning: bool) -> None:
        self.names = set(ENGINE_NAMES) | (set() if lightning else set(TRAINER_NAMES))
        self.self_attrs = set(ENGINE_SELF_ATTRS) | (set() if lightning else set(TRAINER_SELF_ATTRS))
        self.counts = Counts()
        self._aliases: list[set[str]] = [set()]
        self._class_attrs: list[set[str]] = [set()]
        self._targets: set[int] = set()  # ids of Attribute nodes that are write targets

    # ------------------------------------------------------------------ references
    def is_ref(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names or node.id in self._aliases[-1]
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr in self.self_attrs or node.attr in self._class_attrs[-1]
            return node.attr == "engine"  # pl_module.engine, self.source.engine, module.engine
        return False

    # ------------------------------------------------------------------ scopes
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        attrs: set[str] = set()
        for sub in ast.walk(node):  # self.<attr> = <reference> anywhere in the class
            if isinstance(sub, ast.Assign) and self.is_ref(sub.value):
                for target in sub.targets:
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == "self"):
                        attrs.add(target.attr)
        self._class_attrs.append(attrs)
        self.generic_visit(node)
        self._class_attrs.pop()

    def _visit_function(self, node: ast.AST) -> None:
        self._aliases.append(set(self._aliases[-1]))
        self.generic_visit(node)
        self._aliases.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    # ------------------------------------------------------------------ aliases and writes
    def _note_alias(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name) and self.is_ref(value):
            self._aliases[-1].add(target.id)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._note_alias(t, v)

    def _write_root(self, target: ast.AST) -> ast.Attribute | None:
        """The ``<ref>.X`` at the root of an assignment target, if any."""
        node = target
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute) and self.is_ref(node.value):
                return node
            node = node.value
        return None

    def _note_targets(self, targets: list[ast.AST]) -> None:
        for target in targets:
            for node in ast.walk(target) if isinstance(target, (ast.Tuple, ast.List)) else [target]:
                root = self._write_root(node)
                if root is not None and id(root) not in self._targets:
                    self._targets.add(id(root))
                    self.counts.add("write", root.attr)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._note_targets(node.targets)
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)
            self._note_alias(target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._note_targets([node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._note_targets([node.target])
        self.generic_visit(node)
        if node.value is not None:
            self._note_alias(node.target, node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._note_targets(node.targets)
        self.generic_visit(node)

    # ------------------------------------------------------------------ reads
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and self.is_ref(func.value):
            self.visit(func.value)  # a method call: not a read of the method itself
        else:
            self.visit(func)
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.is_ref(node.value) and id(node) not in self._targets:
            self.counts.add("read", node.attr)
        self.generic_visit(node)


def defines_engine_class(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name in ENGINE_CLASSES for n in ast.walk(tree))


def count_package(package: Path) -> dict[str, Counts]:
    """``{module path relative to package: Counts}`` for every counted module with a non-zero count."""
    out: dict[str, Counts] = {}
    for path in sorted(Path(package).rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if defines_engine_class(tree):
            continue
        counter = _ModuleCounter(lightning=rel.startswith("lightning/"))
        counter.visit(tree)
        if counter.counts.reads or counter.counts.writes:
            out[rel] = counter.counts
    return out


def totals(package: Path = DEFAULT_PACKAGE) -> tuple[int, int]:
    """(reads, writes) over the package."""
    counts = count_package(package)
    return sum(c.reads for c in counts.values()), sum(c.writes for c in counts.values())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=DEFAULT_PACKAGE, help="package folder (default warp_drive/training)")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    counts = count_package(args.root)
    reads, writes = sum(c.reads for c in counts.values()), sum(c.writes for c in counts.values())
    if args.json:
        print(json.dumps({"reads": reads, "writes": writes,
                          "modules": {m: {"reads": c.read_names, "writes": c.write_names} for m, c in counts.items()}},
                         indent=2))
        return 0
    print(f"cross-module attribute use of the trainer/engine in {args.root}: {reads} reads, {writes} writes")
    for module, c in counts.items():
        writes_text = f"; writes: {', '.join(f'{k} x{v}' for k, v in sorted(c.write_names.items()))}" if c.writes else ""
        print(f"  {module}: {c.reads} reads ({', '.join(sorted(c.read_names))}){writes_text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
