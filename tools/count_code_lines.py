"""Issue 25's line figures for warp_drive/ without SAC's folder and model: all Python lines, and the
code lines among them (no blank lines, comments or docstrings). Usage: python tools/count_code_lines.py [ROOT]"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path


def files(root: Path) -> list[Path]:
    return [p for p in sorted((root / "warp_drive").rglob("*.py"))
            if "algorithms/sac/" not in p.as_posix() and p.name != "squashed_gaussian.py"]


def code_lines(source: str) -> int:
    """Lines holding a token other than a comment, or lines of a docstring expression."""
    doc: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            doc.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - doc)


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    sources = [p.read_text() for p in files(root)]
    print(f"all lines {sum(s.count(chr(10)) for s in sources)}, code lines {sum(map(code_lines, sources))}, "
          f"files {len(sources)}")


if __name__ == "__main__":
    main()
