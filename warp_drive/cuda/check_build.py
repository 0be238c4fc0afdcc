"""Compile every CUDA source of the package and of every registered env with nvcc (no GPU needed).

Usage: ``python -m warp_drive.cuda.check_build [--arch sm_90] [--envs example_envs ...]``. Exits non-zero
when a kernel does not compile. ``--envs`` names packages whose import registers envs in warp_drive's env
registrar (``example_envs`` for the bundled examples); without it only the core layer is built. A package that
registers no env is an error ("no env registered by my_pkg", exit 1). Each env a package registered is
rendered with its default constants, for one block per env and for several blocks per env (at most the
class's ``max_blocks_per_env``: 1 builds one block per env only); the self-contained units of ``warp_drive/cuda_includes`` are built as they are. A build that holds WarpDrive
2.7.1's kernels (:mod:`warp_drive.compat271.kernels`) is marked ``+2.7.1``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from warp_drive.compat271.kernels import includes_header
from warp_drive.compat271.main_files import compile_main_file
from warp_drive.cuda import project_root
from warp_drive.cuda.compiler import compile_cubin, env_include_dirs, render_source
from warp_drive.errors import ConfigError, CUDACompileError, UnknownEnvError


class BuildCase(NamedTuple):
    """One translation unit to build: a label, the env source (None: core layer only), the
    prelude constants, the agent count, the include directories and the env's ``max_blocks_per_env``
    (None: any number of blocks per env)."""

    label: str
    source: Path | None
    constants: dict
    num_agents: int
    include_dirs: list[Path]
    max_blocks_per_env: int | None = None

    def blocks_per_env(self) -> list[int]:
        """The geometries to build: one block per env, and up to 3 blocks per env where the env allows it."""
        several = min(3, self.num_agents, self.max_blocks_per_env or 3)
        return [1] if several == 1 else [1, several]


def sources_to_check(registrar: Any = None, names: Sequence[str] | None = None) -> list[BuildCase]:
    """The core layer, then every env registered in ``registrar`` (default: warp_drive's module-level
    env registrar; ``names``: only these) that has a CUDA source, built with its default arguments."""
    from warp_drive.vocab.registrar import env_registrar

    registrar = registrar or env_registrar
    out = [BuildCase("core service layer", None, {}, 2500, [])]
    for name in registrar.env_names("pycuda") if names is None else sorted(names):
        env = registrar.get(name, "pycuda")()
        source = getattr(env, "cuda_source", None)
        if source is not None:
            limit = getattr(env, "max_blocks_per_env", None)
            out.append(BuildCase(name, Path(source), env.cuda_constants(), int(env.num_agents), env_include_dirs(source),
                                 None if limit is None else int(limit)))
    return out


def main_files_to_check() -> list[Path]:
    """The self-contained translation units shipped for 2.7.1's tutorials (``cuda_includes/*.cu``)."""
    return sorted((project_root() / "warp_drive" / "cuda_includes").glob("*.cu"))


def register_env_packages(packages: Sequence[str], registrar: Any = None) -> dict[str, list[str]]:
    """Import each package (its import registers its envs); returns ``package -> the env names it
    registered for pycuda``: those that appeared in ``registrar`` (default: warp_drive's) on its import,
    and those whose class lives in the package (for a package imported before).

    Raises:
        ConfigError: a package cannot be imported.
        UnknownEnvError: a package registered no env (naming it and the fix).
    """
    from warp_drive.vocab.registrar import env_registrar

    registrar = registrar or env_registrar
    found: dict[str, list[str]] = {}
    for package in packages:
        before = set(registrar.env_names("pycuda"))
        try:
            importlib.import_module(package)
        except ImportError as err:
            raise ConfigError(f"--envs {package}: cannot import it ({err}); name an importable package") from err
        found[package] = [n for n in registrar.env_names("pycuda") if n not in before
                          or f"{registrar.get(n, 'pycuda').__module__}.".startswith(f"{package}.")]
        if not found[package]:
            raise UnknownEnvError(
                f"--envs {package}: no env registered by {package}; its import must register each env in warp_drive's "
                "env registrar (warp_drive.env.env_registrar.register('my_env', 'my_pkg.my_env:MyEnv') in its "
                "__init__.py; docs/adding_an_env.md, \"Registration\")")
    return found


def _build_failed(label: str, build: Callable[[], str]) -> bool:
    """Run ``build`` (it returns the source it compiled) and print one status line; True when nvcc failed."""
    start = time.perf_counter()
    try:
        status = "ok +2.7.1" if includes_header(build()) else "ok"
    except CUDACompileError as err:
        status = f"FAILED\n{err}"
    print(f"{label}: {status} ({time.perf_counter() - start:.1f} s)")
    return status.startswith("FAILED")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--envs", nargs="*", default=[],
                        help="packages whose import registers the envs to build, e.g. example_envs")
    parser.add_argument("--numba", action="store_true",
                        help="also compile the registered envs' Numba steps (python -m warp_drive.testing.numba_build)")
    args = parser.parse_args(argv)
    try:
        owned = register_env_packages(args.envs)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not args.envs:
        print("no --envs given: building the core layer only (--envs example_envs adds the example envs)")
    failures = 0
    for case in sources_to_check(names=[n for names in owned.values() for n in names]):
        if case.max_blocks_per_env == 1:
            print(f"{case.label}: max_blocks_per_env = 1, built for one block per env only")
        for envs, bpe in zip((4, 2), case.blocks_per_env()):
            text = render_source(envs, case.num_agents, bpe, env_source=case.source, constants=case.constants)
            failures += _build_failed(f"{case.label:<34} E={envs} N={case.num_agents} BPE={bpe} {args.arch}",
                                      lambda: compile_cubin(text, args.arch, include_dirs=case.include_dirs) and text)
    for main_file in main_files_to_check():
        failures += _build_failed(f"{main_file.name:<34} (self-contained) {args.arch}",
                                  lambda: compile_main_file(main_file, None, args.arch).source)
    print(f"{'all CUDA sources compile' if not failures else f'{failures} build(s) failed'}")
    if args.numba:  # its own process: the Numba build stands above this module (it builds envs on the cpu backend)
        import subprocess

        numba = [sys.executable, "-m", "warp_drive.testing.numba_build", "--arch", args.arch, "--envs", *args.envs]
        failures += subprocess.run(numba, check=False).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
