"""The library does not know its examples, and repeated logic lives in one place (issue 16).

Read from the source (AST), no imports of the modules checked:

- nothing in ``warp_drive/`` imports ``example_envs`` (``import``, ``from ... import`` or
  ``importlib.import_module("example_envs...")``) except the modules listed in
  :data:`ALLOWED_EXAMPLE_IMPORTS`;
- the command-line programs live in ``warp_drive/cli`` on the top floor (issue 25): nothing else in
  ``warp_drive/`` imports ``warp_drive.cli`` but the thin re-exports at their former paths
  (``warp_drive.compat``: the former-path and 2.7.1 script modules, which hold only imports);
- one backend alias table (``warp_drive/vocab/backends.py``), one did-you-mean helper
  (``warp_drive/utils/checks.closest_match``: the only ``difflib`` user);
- no bare ``ValueError`` / ``RuntimeError`` raised outside ``warp_drive/training/`` (typed errors
  from ``warp_drive/errors.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "warp_drive"

#: module -> why it may import example_envs
ALLOWED_EXAMPLE_IMPORTS = {
    "warp_drive/cli/envs.py": "the example envs as the command lines name them: the one module of the cli that knows "
                              "them (the programs take env classes from it)",
    "warp_drive/training/lightning/example_factory.py": "ExampleEnvEngineFactory: the Lightning engine factory of the example envs "
                                               "by name (its registrar= takes any other)",
}


def _sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def example_env_imports(path: Path) -> list[int]:
    """Line numbers where ``path`` imports example_envs (statements or import_module/__import__ calls)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "example_envs" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "example_envs":
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and str(node.args[0].value).split(".")[0] == "example_envs":
                lines.append(node.lineno)
    return lines


def test_the_check_sees_every_form_of_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import example_envs\nfrom example_envs.tag_continuous import x\nimport importlib\n"
                     "importlib.import_module('example_envs.cartpole')\n# import example_envs\n'example_envs'\n")
    assert example_env_imports(probe) == [1, 2, 4]


def test_nothing_in_warp_drive_imports_example_envs_but_the_allowed_modules():
    found = {_rel(p): lines for p in _sources() if (lines := example_env_imports(p))}
    unexpected = {k: v for k, v in found.items() if k not in ALLOWED_EXAMPLE_IMPORTS}
    assert not unexpected, f"warp_drive imports example_envs here (register envs in a registrar instead): {unexpected}"
    stale = [k for k in ALLOWED_EXAMPLE_IMPORTS if not (ROOT / k).is_file()]
    assert not stale, f"allowed modules that no longer exist: {stale}"


def module_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in ``path``, function-local ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def _shim_files() -> set[str]:
    """The files of the thin re-export modules at former and 2.7.1 paths (packages: every file in them)."""
    from warp_drive.compat import COMPAT_MODULES, MOVED_MODULES

    files = set()
    for module in [*COMPAT_MODULES, *MOVED_MODULES]:
        base = ROOT.joinpath(*module.split("."))
        files |= {_rel(p) for p in base.glob("*.py")} if base.is_dir() else {_rel(base.with_suffix(".py"))}
    return files


def test_nothing_but_the_former_paths_imports_the_cli():
    shims = _shim_files()
    found = {_rel(p): [line for line, mod in module_imports(p) if mod == "warp_drive.cli" or mod.startswith("warp_drive.cli.")]
             for p in _sources() if not _rel(p).startswith("warp_drive/cli/") and _rel(p) not in shims}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"only the command lines' former paths may import warp_drive.cli (it is the top floor): {found}"


def test_the_cli_imports_no_former_path():
    """The programs import each other and the library by their own paths, never through a re-export."""
    from warp_drive.compat import COMPAT_MODULES, MOVED_MODULES

    former = set(COMPAT_MODULES) | set(MOVED_MODULES)
    found = {_rel(p): [f"{line}: {mod}" for line, mod in module_imports(p) if mod in former]
             for p in _sources(PACKAGE / "cli")}
    assert not any(found.values()), found


def _string_dicts_mapping(path: Path, key: str, value: str) -> list[int]:
    """Lines of dict literals in ``path`` that map the string ``key`` to the string ``value``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == key and isinstance(v, ast.Constant) and v.value == value:
                    out.append(node.lineno)
    return out


def test_one_backend_alias_table():
    tables = {_rel(p): lines for p in _sources() if (lines := _string_dicts_mapping(p, "gpu", "pycuda"))}
    tables.update({_rel(p): lines for p in _sources(ROOT / "example_envs")
                   if (lines := _string_dicts_mapping(p, "gpu", "pycuda"))})
    assert list(tables) == ["warp_drive/vocab/backends.py"], tables


def test_one_did_you_mean_helper():
    users = []
    for path in [*_sources(), *_sources(ROOT / "example_envs")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name == "difflib" for a in node.names):
                users.append(_rel(path))
            elif isinstance(node, ast.ImportFrom) and node.module == "difflib":
                users.append(_rel(path))
    assert users == ["warp_drive/utils/checks.py"], users


@pytest.mark.parametrize("builtin", ["ValueError", "RuntimeError", "Exception"])
def test_no_bare_builtin_errors_outside_training(builtin):
    found = []
    for path in [*_sources(), *_sources(ROOT / "example_envs")]:
        if _rel(path).startswith("warp_drive/training/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name) and exc.id == builtin:
                    found.append(f"{_rel(path)}:{node.lineno}")
    assert not found, f"raise {builtin} (use a typed error of warp_drive/errors.py): {found}"
