"""Prints the import graph of ``warp_drive/`` by folder: which folder imports which, the pairs of folders that
import each other, the arrows that point up the floors of ``docs/architecture.md`` and the folders whose files
stand on more than one floor.

Usage: ``python tools/folder_graph.py [--root TREE] [--files]`` (``--root``: another checkout, say an older
commit's ``git archive``, read with this checkout's rules; ``--files``: the file imports behind each arrow).
Read from the source (AST), as ``tests/cpu/test_import_structure.py`` checks it (``tests/helpers/import_structure.py``):
the re-exports of ``warp_drive/compat.py``'s tables are left out as importers, and an import of an alias path
counts as one of the module it is.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _helper():
    spec = importlib.util.spec_from_file_location("import_structure", HERE / "tests" / "helpers" / "import_structure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout to read (default: this one)")
    parser.add_argument("--files", action="store_true", help="list the file imports behind each folder arrow")
    args = parser.parse_args(argv)
    helper = _helper()
    s = helper.structure_of(args.root.resolve())
    edges, ffloors = s["folder_edges"], s["folder_floors"]
    ours = {pair: found for pair, found in edges.items() if all(f.startswith("warp_drive/") for f in pair)}
    print("folder arrows of warp_drive (importer -> imported, floor -> floor, file imports):")
    for (a, b), found in sorted(ours.items()):
        mark = "  UP" if ffloors.get(b, 0) > ffloors.get(a, 0) else ""
        print(f"  {a} -> {b}  ({ffloors.get(a)} -> {ffloors.get(b)}, {len(found)}){mark}")
        if args.files:
            for (x, y), line in sorted(found.items()):
                print(f"      {x}:{line} -> {y}")
    pairs = helper.two_way_pairs(ours)
    up = helper.upward_folder_arrows(ours, ffloors)
    spans = {f: fl for f, fl in helper.folder_spans(s["floors"], s["shims"]).items() if f.startswith("warp_drive/")}
    several = {f: fl for f, fl in spans.items() if len(fl) > 1}
    print(f"\ntwo-way folder pairs: {len(pairs)}")
    for a, b in pairs:
        print(f"  {a} <-> {b}")
    print(f"upward folder arrows: {len(up)}")
    for a, b in sorted(up):
        print(f"  {a} ({ffloors[a]}) -> {b} ({ffloors[b]})")
    print(f"folders of warp_drive on several floors: {len(several)} of {len(spans)}")
    for folder, found in several.items():
        print(f"  {folder}: {found}")
    if s["problems"]:
        print(f"(the layer table does not place {len(s['problems'])} files; their floors are missing above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
