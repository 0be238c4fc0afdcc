"""Sphinx configuration of the warp_drive documentation.

Build (from the repository root; ``pip install ".[docs]"`` first):

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The entry page is ``docs/_build/html/index.html``. The markdown pages are read by myst-parser;
the API pages under ``docs/api/`` are written by ``docs/apigen.py`` at the start of each build
(one per public module of ``warp_drive`` and ``example_envs``) and rendered by autodoc, which
imports each module. No module of the package imports pycuda at import time (the pycuda backend
imports it when used), so the reference builds without pycuda or a GPU; an optional dependency
that is not installed is mocked (``autodoc_mock_imports``) so the pages of the modules that use
it still build.
"""

from __future__ import annotations

import builtins
import importlib.util
import inspect
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS))

import apigen  # noqa: E402
from docutils import nodes  # noqa: E402
from sphinx import addnodes  # noqa: E402
from sphinx.transforms.post_transforms import SphinxPostTransform  # noqa: E402

apigen.write_api_pages(DOCS / "api")

from warp_drive import __version__  # noqa: E402

project = "warp_drive"
author = "warpdrive-marl contributors"
copyright = "the warpdrive-marl contributors"  # noqa: A001
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# --- autodoc ----------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_class_signature = "mixed"
# Optional dependencies (the extras cuda, lightning, interop, viz, dev) that this environment
# lacks: their modules still import for the reference. pycuda is imported lazily everywhere, and
# is listed only for the day a module imports it at the top.
_OPTIONAL = ("pycuda", "lightning", "pytorch_lightning", "pettingzoo", "matplotlib", "PIL", "tensorboard", "skrl")
autodoc_mock_imports = [name for name in _OPTIONAL if importlib.util.find_spec(name) is None]

# --- napoleon (the docstrings use Google style: Args:, Returns:, Raises:) ----------------------
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# "Attributes:" as :ivar: fields: as attribute entries they would describe a NamedTuple's fields a
# second time (autodoc documents the fields themselves).
napoleon_use_ivar = True

# --- myst-parser (the markdown pages) ----------------------------------------------------------
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# --- HTML -------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"warp_drive {release}"
html_theme_options = {"description": "End-to-end multi-agent RL on one GPU", "fixed_sidebar": True}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}


# --- project docstring conventions -------------------------------------------------------------
_SHAPES_HEADER = re.compile(r"^(\s*)Shapes:\s*$")


def _shapes_as_literal(app, what, name, obj, options, lines):
    """Render a docstring's ``Shapes:`` section (plain-text shape notation such as
    ``obs: (B, E, A, *obs_dims)``) as preformatted text, exactly as written in the source.

    The section is the project's convention for tensor shapes; its ``*`` (unpacked dimensions)
    and ``->`` are notation, not reST markup. Runs before napoleon, which does not know the
    section.
    """
    i = 0
    while i < len(lines):
        match = _SHAPES_HEADER.match(lines[i])
        if not match:
            i += 1
            continue
        indent = match.group(1)
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > len(indent)):
            end += 1
        body = lines[i + 1 : end]
        while body and not body[-1].strip():
            body.pop()
        lines[i:end] = [f"{indent}.. rubric:: Shapes", "", f"{indent}::", "", *body, ""]
        i += 5 + len(body)


def _list_reexports(app, what, name, obj, options, lines):
    """End a module's page with the classes and functions it re-exports (its ``__all__`` names
    defined elsewhere), linked to the page that documents them: packages such as ``warp_drive``
    and ``warp_drive.config``, and the modules kept for 2.7.1's import paths, document their own
    definitions only (``:ignore-module-all:``), so each object is described once."""
    if what != "module":
        return
    entries = []
    for export in getattr(obj, "__all__", ()):
        target = getattr(obj, export, None)
        home = getattr(target, "__module__", None)
        if not (inspect.isclass(target) or inspect.isfunction(target)) or home in (None, name):
            continue
        entries.append(f"- :py:obj:`{export} <{home}.{target.__qualname__}>` (``{home}``)")
    if entries:
        lines.extend(["", ".. rubric:: Re-exported here", "", *entries, ""])


class _BuiltinNamesAsText(SphinxPostTransform):
    """A type annotation naming a builtin (``type``, ``int``, ``dict``...) stays plain text.

    Without intersphinx (the build runs offline) the Python domain's fallback would link such a
    name to any documented attribute of the same name, e.g. ``env_cls: type`` to
    ``ModelConfig.type``. Runs before the references are resolved.
    """

    default_priority = 5

    def run(self, **kwargs):
        for node in list(self.document.findall(addnodes.pending_xref)):
            if (
                node.get("refdomain") == "py"
                and node.get("reftype") in ("class", "obj")
                and node.get("reftarget") in _BUILTIN_NAMES
            ):
                node.replace_self(node.children or [nodes.Text(node["reftarget"])])


_BUILTIN_NAMES = frozenset(name for name in dir(builtins) if not name.startswith("_"))


def setup(app):
    app.connect("autodoc-process-docstring", _shapes_as_literal, priority=400)  # napoleon: 500
    app.connect("autodoc-process-docstring", _list_reexports)
    app.add_post_transform(_BuiltinNamesAsText)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
