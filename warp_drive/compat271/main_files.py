"""WarpDrive 2.7.1's ``_compile(main_file, cubin_file)``: self-contained ``.cu`` files built into the cache.

2.7.1 ran nvcc on a main file and wrote the binary to ``cubin_file``, usually inside the installed
package. Here the binary goes to the content-addressed cache (:mod:`warp_drive.cuda.compiler`) and
``cubin_file`` becomes a name for it (:func:`compile_main_file`). Binaries built this way also leave
their source in the cache, keyed by the binary's hash, so a later process that loads the copy still
knows the kernels' signatures (:func:`binary_source`). 2.7.1's prebuilt test binaries
(``warp_drive/cuda_bin/test_build*.fatbin``) are built on first use from the shipped sources
(:func:`shipped_main_file`).

A main file states its own launch constants and includes what it needs: ``core_service.cuh``,
and ``compat_271.cuh`` where it uses 2.7.1's kernel-side names (the shipped ``test_build*.cu`` do).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from warp_drive.cuda import core_dir, project_root
from warp_drive.cuda.cache_digest import write_atomically
from warp_drive.cuda.compiler import (
    DEFAULT_OPTIONS,
    compile_cubin,
    ensure_cache_dir,
    quoted_includes,
    trusted_cache_entry,
)
from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuiltBinary:
    """A binary built from a user's main file: where it lives in the cache, and the text of the
    main file with the files it includes (outside the core directory), for signatures."""

    binary: Path
    source: str
    main_file: Path
    arch: str


_ALIASES: dict[str, BuiltBinary] = {}


def _alias_key(path: str | os.PathLike[str]) -> str:
    return str(Path(os.path.expanduser(str(path))).resolve())


def binary_alias(path: str | os.PathLike[str]) -> BuiltBinary | None:
    """The binary recorded for ``path`` by :func:`compile_main_file` in this process, if any."""
    return _ALIASES.get(_alias_key(path))


def _package_dirs() -> list[Path]:
    root = project_root().resolve()
    return [root / "warp_drive", root / "example_envs"]


def is_inside_package(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` lies inside the installed ``warp_drive`` or ``example_envs`` package."""
    target = Path(os.path.expanduser(str(path))).resolve()
    return any(target == d or d in target.parents for d in _package_dirs())


def shipped_main_file(cubin_file: str | os.PathLike[str]) -> Path | None:
    """The shipped source of one of 2.7.1's prebuilt binaries: ``warp_drive/cuda_bin/<stem>.*``
    -> ``warp_drive/cuda_includes/<stem>.cu`` when that file exists (``test_build``,
    ``test_build_multiblocks``); None for any other path."""
    package = _package_dirs()[0]
    target = Path(os.path.expanduser(str(cubin_file))).resolve()
    if target.parent != package / "cuda_bin":
        return None
    main = package / "cuda_includes" / f"{target.stem}.cu"
    return main if main.is_file() else None


def _source_index(digest: str) -> Path:
    return ensure_cache_dir() / "sources" / f"{digest}.cu"


def binary_source(path: str | os.PathLike[str]) -> str | None:
    """Source text recorded for a binary built by :func:`compile_main_file` (in any process), found
    by the hash of the binary's bytes; None for binaries built elsewhere."""
    try:
        index = _source_index(hashlib.sha256(Path(path).read_bytes()).hexdigest())
        return index.read_text() if trusted_cache_entry(index) else None
    except OSError:
        return None


def compile_main_file(
    main_file: str | os.PathLike[str],
    cubin_file: str | os.PathLike[str] | None,
    arch: str,
    options: Sequence[str] = DEFAULT_OPTIONS,
) -> BuiltBinary:
    """Compile a self-contained .cu file (it defines the launch constants itself) into the cache.

    Includes resolve relative to the file, then the core directory. When ``cubin_file`` is given
    it is recorded as a name of the result in a process-wide table that ``load_cuda_from_binary_file``
    consults (:func:`binary_alias`), and the binary is copied there unless that path lies inside the
    installed package or cannot be written.

    Raises:
        ConfigError: ``main_file`` does not exist.
        CUDACompileError: nvcc failed.
    """
    main = Path(os.path.expanduser(str(main_file))).resolve()
    if not main.is_file():
        raise ConfigError(f"CUDA main file {str(main_file)!r} does not exist; pass the path of a .cu file")
    dirs = [main.parent]
    depends = quoted_includes(main, [*dirs, core_dir()])
    source = f'#line 1 "{main.as_posix()}"\n{main.read_text()}\n'
    binary = compile_cubin(source, arch, include_dirs=dirs, options=options, depends=depends)
    core = core_dir().resolve()
    parts = [main.read_text()] + [p.read_text() for p in depends if core not in p.parents]
    built = BuiltBinary(binary=binary, source="\n".join(parts), main_file=main, arch=arch)
    with contextlib.suppress(OSError):
        write_atomically(_source_index(hashlib.sha256(binary.read_bytes()).hexdigest()), built.source.encode(), private=True)
    if cubin_file is not None:
        _ALIASES[_alias_key(cubin_file)] = built
        target = Path(os.path.expanduser(str(cubin_file))).absolute()
        if is_inside_package(target):
            logger.info("%s lies inside the installed package: nothing is written there; the binary "
                        "stays in the cache (%s) and load_cuda_from_binary_file(%r) finds it", target, binary, str(cubin_file))
        else:
            try:
                write_atomically(target, binary.read_bytes())
            except OSError as err:
                logger.info("cannot write %s (%s); load_cuda_from_binary_file(%r) finds the cached binary %s",
                            target, err, str(cubin_file), binary)
    return built
