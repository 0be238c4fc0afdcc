"""Compile every CUDA source of the package and of every example env with nvcc (no GPU needed).

Usage: ``python -m warp_drive.cuda.check_build [--arch sm_90]``. Exits non-zero when a kernel
does not compile. Each env is rendered with its default constants, for one block per env and for
several blocks per env; the self-contained units of ``warp_drive/cuda_includes`` are built as
they are.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from warp_drive.cuda import project_root
from warp_drive.cuda.compiler import compile_cubin, compile_main_file, render_source
from warp_drive.errors import CUDACompileError

logger = logging.getLogger(__name__)


def sources_to_check() -> list[tuple[str, object, dict, int]]:
    """(label, env source or None, constants, num_agents) for the core layer and every example env."""
    out: list[tuple[str, object, dict, int]] = [("core service layer", None, {}, 2500)]
    try:
        from example_envs import example_env_names, get_example_env_class
    except ImportError:  # example envs are not installed
        return out
    for name in example_env_names():
        env = get_example_env_class(name)()
        out.append((name, env.cuda_source, env.cuda_constants(), int(env.num_agents)))
    return out


def main_files_to_check() -> list[Path]:
    """The self-contained translation units shipped for 2.7.1's tutorials (``cuda_includes/*.cu``)."""
    return sorted((project_root() / "warp_drive" / "cuda_includes").glob("*.cu"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args(argv)
    failures = 0
    for label, source, constants, agents in sources_to_check():
        for envs, bpe in ((4, 1), (2, min(3, agents))):
            start = time.perf_counter()
            try:
                text = render_source(envs, agents, bpe, env_source=source, constants=constants)
                dirs = [source.parent] if source is not None else []
                compile_cubin(text, args.arch, include_dirs=dirs)
                status = "ok"
            except CUDACompileError as err:
                failures += 1
                status = f"FAILED\n{err}"
            print(f"{label:<34} E={envs} N={agents} BPE={bpe} {args.arch}: {status} ({time.perf_counter() - start:.1f} s)")
    for main_file in main_files_to_check():
        start = time.perf_counter()
        try:
            compile_main_file(main_file, None, args.arch)
            status = "ok"
        except CUDACompileError as err:
            failures += 1
            status = f"FAILED\n{err}"
        print(f"{main_file.name:<34} (self-contained) {args.arch}: {status} ({time.perf_counter() - start:.1f} s)")
    print(f"{'all CUDA sources compile' if not failures else f'{failures} build(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
