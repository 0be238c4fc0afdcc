"""Build the tutorial notebooks from their percent-format sources.

Each notebook ``tutorials/NN_name.ipynb`` is generated from ``tutorials/src/NN_name.py``, a plain
Python file in the "percent" format that jupytext and VS Code understand (reviewable diffs, runnable
as a script)::

    # %% [markdown]
    # # A title
    # Some text.

    # %% tags=["gpu"]
    if BACKEND == "pycuda":
        ...

Rules of the format used here:

* ``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell; ``tags=[...]`` (a JSON list)
  sets the cell's ``metadata.tags``. Tags in use: ``install`` (the pip cell, skipped by the
  tests), ``gpu`` (needs the pycuda backend; skipped by the CPU tests).
* Markdown lines are written as comments (``# text``); the ``# `` prefix is removed.
* IPython magics and shell escapes are written commented out, ``# %pip ...`` / ``# !torchrun ...``
  (also indented inside a block), so the source stays valid Python; they are uncommented in the
  notebook. Ordinary comments therefore never start with ``# %`` or ``# !``.

Usage::

    python tutorials/build_notebooks.py            # (re)write every notebook
    python tutorials/build_notebooks.py --check    # exit 1 if a notebook is out of date

Needs ``nbformat`` (``pip install nbformat``). Notebooks are written without outputs and with
deterministic cell ids, so rebuilding an unchanged source gives a byte-identical file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_DIR = HERE / "src"

_HEADER = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?P<rest>.*)$")
_TAGS = re.compile(r"^\s*tags=(?P<tags>\[.*\])\s*$")
_MAGIC = re.compile(r"^(?P<indent>\s*)# (?P<magic>[%!].*)$")

NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
    "accelerator": "GPU",  # Colab: ask for a GPU runtime
    "colab": {"provenance": []},
}


def parse_cells(text: str, origin: str = "<source>") -> list[tuple[str, str, list[str]]]:
    """Split a percent-format source into ``(cell_type, source, tags)`` triples.

    Raises:
        ValueError: text before the first ``# %%`` marker, or a malformed marker.
    """
    cells: list[tuple[str, list[str], list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            rest = header.group("rest")
            tags: list[str] = []
            if rest.strip():
                match = _TAGS.match(rest)
                if match is None:
                    raise ValueError(f"{origin}:{number}: cannot parse cell marker {line!r}; use '# %% tags=[\"gpu\"]'")
                tags = json.loads(match.group("tags"))
            cells.append(("markdown" if header.group("markdown") else "code", [], tags))
            continue
        if not cells:
            if line.strip():
                raise ValueError(f"{origin}:{number}: text before the first '# %%' cell marker")
            continue
        cells[-1][1].append(line)
    out = []
    for kind, lines, tags in cells:
        if kind == "markdown":
            lines = [_uncomment_markdown(line, origin) for line in lines]
        else:
            lines = [_uncomment_magic(line) for line in lines]
        source = "\n".join(lines).strip("\n")
        if source:
            out.append((kind, source, tags))
    return out


def _uncomment_markdown(line: str, origin: str) -> str:
    if line == "#":
        return ""
    if line.startswith("# "):
        return line[2:]
    if not line.strip():
        return ""
    raise ValueError(f"{origin}: markdown line {line!r} must start with '# '")


def _uncomment_magic(line: str) -> str:
    match = _MAGIC.match(line)
    return match.group("indent") + match.group("magic") if match else line


def build_notebook(source_path: Path):  # -> nbformat.NotebookNode
    """The notebook of one source file (validated against the nbformat 4 schema)."""
    import nbformat
    from nbformat import v4

    stem = source_path.stem
    cells = []
    for index, (kind, source, tags) in enumerate(parse_cells(source_path.read_text(), str(source_path))):
        metadata = {"tags": tags} if tags else {}
        cell_id = f"{stem}-{index:03d}"
        if kind == "markdown":
            cells.append(v4.new_markdown_cell(source, id=cell_id, metadata=metadata))
        else:
            cells.append(v4.new_code_cell(source, id=cell_id, metadata=metadata))
    nb = v4.new_notebook(cells=cells, metadata=NOTEBOOK_METADATA)
    nbformat.validate(nb)
    return nb


def notebook_text(source_path: Path) -> str:
    import nbformat

    return nbformat.writes(build_notebook(source_path)) + "\n"


def sources() -> list[Path]:
    return sorted(SOURCE_DIR.glob("[0-9][0-9]_*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the notebooks are up to date")
    args = parser.parse_args(argv)
    stale = []
    for src in sources():
        target = HERE / f"{src.stem}.ipynb"
        text = notebook_text(src)
        if target.is_file() and target.read_text() == text:
            continue
        if args.check:
            stale.append(target.name)
        else:
            target.write_text(text)
            print(f"wrote {target.relative_to(HERE.parent)}")
    if stale:
        print(f"out of date (run python tutorials/build_notebooks.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
