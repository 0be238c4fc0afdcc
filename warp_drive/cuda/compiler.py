"""Render a translation unit in memory and compile it with nvcc into a content-addressed cache.

Nothing is ever written inside the installed package. Binaries live in
``$WARP_DRIVE_CACHE_DIR`` (default ``$XDG_CACHE_HOME/warp_drive/kernels`` or
``~/.cache/warp_drive/kernels``) under the SHA-256 of everything that determines them: the
rendered source, every header it may include, the nvcc options, the architecture and the nvcc
version. Files are written to a temporary name and renamed into place, so concurrent processes
(several ranks, several jobs with different shapes) never see a partial binary.

A cached binary is code that runs on the GPU and a cached source decides how kernels are bound,
so the cache is private (:func:`ensure_cache_dir`) and an entry is loaded only when it is trusted
(:func:`trusted_cache_entry`) and intact (:mod:`warp_drive.cuda.cache_digest`); any other entry is
rebuilt (with a warning).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import math
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from warp_drive.compat271.kernels import INCLUDE_LINE as COMPAT_271_INCLUDE
from warp_drive.compat271.kernels import names_used
from warp_drive.cuda import core_dir
from warp_drive.cuda.cache_digest import entry_intact, write_entry
from warp_drive.cuda.start_state_kernel import render_start_state_kernels
from warp_drive.errors import CUDACompileError, ConfigError

logger = logging.getLogger(__name__)

DEFAULT_OPTIONS: tuple[str, ...] = ("-O3", "-std=c++17", "-diag-suppress=177")
_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".cu")


def cache_dir() -> Path:
    """The kernel cache directory (created on first use, never inside the package)."""
    if os.environ.get("WARP_DRIVE_CACHE_DIR"):
        return Path(os.environ["WARP_DRIVE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "warp_drive" / "kernels"


_FALLBACK_CACHE: Path | None = None


def _owner_ok(st: os.stat_result) -> bool:
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def ensure_cache_dir() -> Path:
    """The kernel cache directory, created private to the user (mode 0700), and made so when it
    exists and is the user's. A directory owned by another user is replaced, for this process, by
    a new private temporary directory (with a warning)."""
    global _FALLBACK_CACHE
    path = cache_dir()
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for p in reversed(missing):  # create only the components that do not exist, each private
        with contextlib.suppress(FileExistsError):
            p.mkdir(mode=0o700)
    st = path.stat()
    if not _owner_ok(st):
        if _FALLBACK_CACHE is None:
            _FALLBACK_CACHE = Path(tempfile.mkdtemp(prefix="warp_drive_kernels_"))
            logger.warning(
                "kernel cache %s belongs to another user (uid %d); compiled kernels are not loaded from it. "
                "This process caches them in %s; set $WARP_DRIVE_CACHE_DIR to a directory you own to keep them",
                path, st.st_uid, _FALLBACK_CACHE,
            )
        return _FALLBACK_CACHE
    if st.st_mode & 0o077:
        try:
            path.chmod(0o700)
            logger.info("kernel cache %s was readable or writable by others; made it private (0700)", path)
        except OSError as err:  # pragma: no cover - e.g. a read-only file system
            logger.warning("kernel cache %s is not private and cannot be made so: %s", path, err)
    return path


def trusted_cache_entry(path: Path) -> bool:
    """True when ``path`` exists and may be loaded: a regular file (not a link) owned by the user
    and not group- or world-writable. An entry that exists but fails this is logged (warning)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    problems = []
    if not stat.S_ISREG(st.st_mode):
        problems.append("is not a regular file")
    if not _owner_ok(st):
        problems.append(f"belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o022:
        problems.append(f"is group- or world-writable (mode {st.st_mode & 0o777:o})")
    if problems:
        logger.warning("kernel cache entry %s %s; not loading it, it is rebuilt", path, " and ".join(problems))
        return False
    return True


def find_nvcc() -> str:
    """Path of nvcc: ``$WARP_DRIVE_NVCC``, ``PATH``, then ``$CUDA_HOME/bin``."""
    homes = (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
    candidates = [os.environ.get("WARP_DRIVE_NVCC"), shutil.which("nvcc")]
    candidates += [os.path.join(home, "bin", "nvcc") for home in homes if home]
    for cand in candidates:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise CUDACompileError(
        "nvcc was not found (looked at $WARP_DRIVE_NVCC, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin); "
        "install the CUDA toolkit and put nvcc on PATH"
    )


@lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    """The full ``nvcc --version`` text (part of the cache key)."""
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout


# --------------------------------------------------------------------------------- rendering
def _format_value(name: str, value: object) -> str:
    if isinstance(value, bool):
        return f"constexpr bool {name} = {'true' if value else 'false'};"
    if isinstance(value, int):
        if not -(2**31) <= value < 2**31:
            raise ConfigError(f"CUDA constant {name}={value} does not fit in a 32-bit int")
        return f"constexpr int {name} = {value};"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"CUDA constant {name}={value} is not finite")
        return f"constexpr float {name} = {float(value)!r}f;"
    if isinstance(value, (tuple, list)):
        if not value:
            raise ConfigError(f"CUDA array constant {name} is empty")
        if all(isinstance(v, (int,)) and not isinstance(v, bool) for v in value):
            body = ", ".join(str(int(v)) for v in value)
            return f"__device__ constexpr int {name}[{len(value)}] = {{{body}}};"
        body = ", ".join(f"{float(v)!r}f" for v in value)
        return f"__device__ constexpr float {name}[{len(value)}] = {{{body}}};"
    if isinstance(value, np.ndarray):
        return _format_value(name, value.reshape(-1).tolist())
    if isinstance(value, np.generic):
        return _format_value(name, value.item())
    raise ConfigError(
        f"CUDA constant {name} has unsupported type {type(value).__name__}; use int, float, bool "
        f"or a tuple of ints/floats"
    )


def threads_per_block(num_agents: int, blocks_per_env: int) -> int:
    """Threads of every block: ceil(num_agents / blocks_per_env) (``wkThreadsPerBlock``)."""
    return -(-int(num_agents) // int(blocks_per_env))


#: Shared memory per block assumed when the device is not known (the limit without opt-in).
DEFAULT_MAX_SHARED_BYTES = 48 * 1024


def render_prelude(
    num_envs: int,
    num_agents: int,
    blocks_per_env: int = 1,
    constants: Mapping[str, object] | None = None,
    max_shared_bytes: int = DEFAULT_MAX_SHARED_BYTES,
) -> str:
    """The generated head of every translation unit: launch dims, the device's shared memory per
    block (opt-in limit; ``wkMaxSharedBytesPerBlock``) and env constants."""
    lines = [
        "// generated by warp_drive.cuda.compiler.render_prelude",
        f"constexpr int wkNumberEnvs = {int(num_envs)};",
        f"constexpr int wkNumberAgents = {int(num_agents)};",
        f"constexpr int wkBlocksPerEnv = {int(blocks_per_env)};",
        f"constexpr int wkThreadsPerBlock = {threads_per_block(num_agents, blocks_per_env)};",
        f"constexpr int wkMaxSharedBytesPerBlock = {int(max_shared_bytes)};",
    ]
    for name, value in sorted((constants or {}).items()):
        if not name.isidentifier():
            raise ConfigError(f"CUDA constant name {name!r} is not a C identifier")
        lines.append(_format_value(name, value))
    return "\n".join(lines) + "\n"


def render_source(
    num_envs: int,
    num_agents: int,
    blocks_per_env: int = 1,
    env_source: str | os.PathLike[str] | None = None,
    constants: Mapping[str, object] | None = None,
    extra_code: str = "",
    max_shared_bytes: int = DEFAULT_MAX_SHARED_BYTES,
    compat_271: bool = False,
) -> str:
    """Render the whole translation unit as a string.

    Layout: prelude, ``#include "core_service.cuh"``, WarpDrive 2.7.1's ``compat_271.cuh`` where the rule of
    :mod:`warp_drive.compat271.kernels` asks for it, then the env's source (inlined with a ``#line`` directive
    so nvcc errors point at the original file), then one reset kernel per start-state hook the env's source
    defines (:mod:`warp_drive.cuda.start_state_kernel`), then ``extra_code``.
    """
    code = [extra_code]
    body = []
    if env_source is not None:
        path = Path(env_source)
        if not path.is_file():
            raise ConfigError(f"env CUDA source {str(path)!r} does not exist")
        text = path.read_text()
        core = core_dir().resolve()
        code += [text, *(h.read_text(errors="replace") for h in quoted_includes(path) if core not in h.parents)]
        body.append(f'#line 1 "{path.as_posix()}"\n{text}\n')
        hooks = render_start_state_kernels(text)
        if hooks:
            body.append('#line 1 "<start-state reset kernels>"\n' + hooks)
    if extra_code:
        body.append('#line 1 "<user source>"\n' + extra_code + "\n")
    parts = [render_prelude(num_envs, num_agents, blocks_per_env, constants, max_shared_bytes),
             '#include "core_service.cuh"\n']
    if compat_271 or names_used(*code):
        parts.append(COMPAT_271_INCLUDE)
    return "".join(parts + body)


# --------------------------------------------------------------------------------- compiling
def _dir_digest(directories: Iterable[Path]) -> str:
    """Digest of every header file under ``directories`` (as :func:`_files_digest` of them)."""
    return _files_digest(p for d in directories if d.is_dir() for p in sorted(d.rglob("*"))
                         if p.suffix in _HEADER_SUFFIXES and p.is_file())


def extra_options() -> list[str]:
    """nvcc options added to every build from ``$WARP_DRIVE_NVCC_OPTIONS`` (e.g. ``-lineinfo`` to
    profile kernels with source lines in Nsight Compute); part of the cache key."""
    return shlex.split(os.environ.get("WARP_DRIVE_NVCC_OPTIONS", ""))


def _files_digest(files: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def compile_cubin(
    source: str,
    arch: str,
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    options: Sequence[str] = DEFAULT_OPTIONS,
    depends: Sequence[str | os.PathLike[str]] | None = None,
) -> Path:
    """Compile ``source`` to a cubin for ``arch`` (e.g. ``"sm_90"``) and return its cached path.

    The cache key covers every header under the core directory and, unless ``depends`` lists the
    exact files the source includes, every header under ``include_dirs``.

    Raises:
        CUDACompileError: nvcc is missing or failed; the message has the command and stderr.
    """
    nvcc = find_nvcc()
    options = [*options, *extra_options()]
    dirs = [core_dir(), *[Path(d) for d in include_dirs]]
    if depends is None:
        digest = _dir_digest(dirs)
    else:
        digest = _dir_digest([core_dir()]) + _files_digest(Path(p) for p in depends)
    key_parts = [source, arch, " ".join(options), nvcc_version(nvcc), digest]
    key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:32]
    out_dir = ensure_cache_dir()
    target = out_dir / f"{key}_{arch}.cubin"
    global last_build_compiled
    last_build_compiled = False
    if trusted_cache_entry(target) and entry_intact(target):
        logger.debug("kernel cache hit %s", target)
        return target
    # one compiler per key across processes (ranks, parallel jobs): the others wait, then hit the cache
    lock_fd = os.open(out_dir / f"{key}_{arch}.lock", os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(lock_fd, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if trusted_cache_entry(target) and entry_intact(target):
            logger.debug("kernel cache hit %s (built by another process)", target)
            return target
        _nvcc(nvcc, source, arch, dirs, options, target)
        last_build_compiled = True
    return target


#: True when the last :func:`compile_cubin` call in this process ran nvcc (a cache miss).
last_build_compiled = False


def _nvcc(nvcc: str, source: str, arch: str, dirs: list, options: Sequence[str], target: Path) -> None:
    """Run nvcc in a temporary directory and move the cubin atomically to ``target``."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="warp_drive_nvcc_") as tmp:
        src = Path(tmp) / "warp_drive_module.cu"
        src.write_text(source)
        out = Path(tmp) / "module.cubin"
        cmd = [nvcc, "-cubin", f"-arch={arch}", *options, *(f"-I{d}" for d in dirs), "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-40:])
            raise CUDACompileError(
                f"nvcc failed with exit code {proc.returncode}\ncommand: {' '.join(cmd)}\n{tail}"
            )
        if proc.stderr.strip():
            logger.warning("nvcc: %s", proc.stderr.strip()[-2000:])
        write_entry(target, out.read_bytes())
    logger.info("compiled %s for %s in %.1f s (cache miss)", target.name, arch, time.perf_counter() - start)


# ----------------------------------------------------------------- what a source includes
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def quoted_includes(main_file: str | os.PathLike[str], include_dirs: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """Every file reached through ``#include "..."`` from ``main_file``, recursively, resolved the
    way nvcc resolves them (the including file's directory first, then ``include_dirs``). Includes
    that resolve nowhere (system headers) are skipped."""
    dirs = [Path(d) for d in include_dirs]
    seen: dict[Path, None] = {}
    todo = [Path(main_file).resolve()]
    while todo:
        current = todo.pop()
        try:
            text = current.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        for name in _QUOTED_INCLUDE.findall(text):
            for base in (current.parent, *dirs):
                candidate = (base / name).resolve()
                if candidate.is_file():
                    if candidate not in seen:
                        seen[candidate] = None
                        todo.append(candidate)
                    break
    return list(seen)


def env_include_dirs(env_source: str | os.PathLike[str],
                     include_dirs: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """Include directories for an env's source: ``include_dirs``, the source's folder, and the
    folder of every header it reaches through ``#include "..."`` (e.g. ``"../shared.cuh"``), so the
    build's cache key covers those headers too."""
    dirs = [*(Path(d) for d in include_dirs), Path(env_source).resolve().parent]
    for header in quoted_includes(env_source, dirs):
        if header.parent not in dirs and core_dir().resolve() != header.parent:
            dirs.append(header.parent)
    return dirs
