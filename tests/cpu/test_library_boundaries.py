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
  from ``warp_drive/errors.py``);
- Lightning (``warp_drive/training/lightning/``) and the command lines (``warp_drive/cli/``) use no 2.7.1
  class (issue 38): they import neither the module of ``Trainer271`` nor a 2.7.1 path, and name no
  2.7.1 trainer class; the plain ``Trainer`` and its engine are theirs.
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


#: The module of the one 2.7.1 trainer class, and the names of 2.7.1's trainer classes.
TRAINER_271_MODULE = "warp_drive.training.run.trainer271"
TRAINER_271_NAMES = frozenset({"Trainer271", "TrainerA2C", "TrainerBase", "TrainerDDPG", "trainer_class_for"})


def compat_class_uses(path: Path, former: set[str]) -> list[str]:
    """``line: what`` wherever ``path`` imports the module of :data:`TRAINER_271_NAMES` or a module of
    ``former`` (2.7.1's paths and this project's former ones), or names one of those classes."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [f"{node.lineno}: import {a.name}" for a in node.names if a.name == TRAINER_271_MODULE or a.name in former]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == TRAINER_271_MODULE or node.module in former:
                out.append(f"{node.lineno}: from {node.module} import ...")
            out += [f"{node.lineno}: imports {a.name}" for a in node.names if a.name in TRAINER_271_NAMES]
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in TRAINER_271_NAMES:
                out.append(f"{node.lineno}: names {name}")
    return out


def test_the_check_sees_every_use_of_a_compat_class(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import warp_drive.training.run.trainer271\nfrom warp_drive.training.trainer import Trainer\n"
                     "from x import Trainer271\ny = mod.TrainerDDPG\nfrom warp_drive.training.run.trainer import Trainer\n")
    found = compat_class_uses(probe, {"warp_drive.training.trainer"})
    assert [f.split(":")[0] for f in found] == ["1", "2", "3", "4"], found


def test_lightning_and_the_cli_use_no_compat_class():
    """Lightning and the command lines train the plain Trainer and its engine; 2.7.1's class is for 2.7.1 code."""
    from warp_drive.compat import COMPAT_MODULES, MOVED_ALIASES, MOVED_MODULES

    former = set(COMPAT_MODULES) | set(MOVED_MODULES) | set(MOVED_ALIASES)
    shims = _shim_files()
    found = {_rel(p): uses for folder in (PACKAGE / "training" / "lightning", PACKAGE / "cli") for p in _sources(folder)
             if _rel(p) not in shims and (uses := compat_class_uses(p, former))}
    assert not found, f"Lightning and the command lines use a 2.7.1 class or path: {found}"
