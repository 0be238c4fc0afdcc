"""Compile every CUDA source of the package and of every registered env with nvcc (no GPU needed).

Usage: ``python -m warp_drive.cuda.check_build [--arch sm_90] [--envs example_envs ...]``. Exits non-zero
when a kernel does not compile. ``--envs`` names packages whose import registers envs in warp_drive's env
registrar (``example_envs`` for the bundled examples); without it only the core layer is built. Each registered
env is rendered with its default constants, for one block per env and for several blocks per env; the
self-contained units of ``warp_drive/cuda_includes`` are built as they are. A build that holds WarpDrive
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
from warp_drive.errors import ConfigError, CUDACompileError


class BuildCase(NamedTuple):
    """One translation unit to build: a label, the env source (None: core layer only), the
    prelude constants, the agent count and the include directories."""

    label: str
    source: Path | None
    constants: dict
    num_agents: int
    include_dirs: list[Path]


def sources_to_check(registrar: Any = None) -> list[BuildCase]:
    """The core layer, then every env registered in ``registrar`` (default: warp_drive's
    module-level env registrar) that has a CUDA source, built with its default arguments."""
    from warp_drive.env.registrar import env_registrar

    registrar = registrar or env_registrar
    out = [BuildCase("core service layer", None, {}, 2500, [])]
    for name in registrar.env_names("pycuda"):
        env = registrar.get(name, "pycuda")()
        source = getattr(env, "cuda_source", None)
        if source is not None:
            out.append(BuildCase(name, Path(source), env.cuda_constants(), int(env.num_agents), env_include_dirs(source)))
    return out


def main_files_to_check() -> list[Path]:
    """The self-contained translation units shipped for 2.7.1's tutorials (``cuda_includes/*.cu``)."""
    return sorted((project_root() / "warp_drive" / "cuda_includes").glob("*.cu"))


def register_env_packages(packages: Sequence[str]) -> None:
    """Import each package (its import registers its envs).

    Raises:
        ConfigError: a package cannot be imported.
    """
    for package in packages:
        try:
            importlib.import_module(package)
        except ImportError as err:
            raise ConfigError(f"--envs {package}: cannot import it ({err}); name an importable package") from err


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
                        help="also compile the registered envs' Numba steps (python -m warp_drive.numba_backend.build)")
    args = parser.parse_args(argv)
    register_env_packages(args.envs)
    if not args.envs:
        print("no --envs given: building the core layer only (--envs example_envs adds the example envs)")
    failures = 0
    for case in sources_to_check():
        for envs, bpe in ((4, 1), (2, min(3, case.num_agents))):
            text = render_source(envs, case.num_agents, bpe, env_source=case.source, constants=case.constants)
            failures += _build_failed(f"{case.label:<34} E={envs} N={case.num_agents} BPE={bpe} {args.arch}",
                                      lambda: compile_cubin(text, args.arch, include_dirs=case.include_dirs) and text)
    for main_file in main_files_to_check():
        failures += _build_failed(f"{main_file.name:<34} (self-contained) {args.arch}",
                                  lambda: compile_main_file(main_file, None, args.arch).source)
    print(f"{'all CUDA sources compile' if not failures else f'{failures} build(s) failed'}")
    if args.numba:  # its own process: the Numba build stands above this module (it builds envs on the cpu backend)
        import subprocess

        numba = [sys.executable, "-m", "warp_drive.numba_backend.build", "--arch", args.arch, "--envs", *args.envs]
        failures += subprocess.run(numba, check=False).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
