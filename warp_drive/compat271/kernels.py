"""WarpDrive 2.7.1's kernels on the GPU: their names, and when ``compat_271.cuh`` is compiled in.

``warp_drive/cuda/core/compat_271.cuh`` holds 2.7.1's kernel-side names (:data:`NAMES`, e.g. ``getEnvID``
and the env barrier ``__sync_env_threads``) and 2.7.1's built-in kernels under their names and parameter
lists (:data:`COMPAT_FUNCTIONS`). This project's own services never use it, so a build holds it only when
2.7.1 code asks for it. The rule is decided from text, before anything is compiled:

- a rendered translation unit (:func:`warp_drive.cuda.compiler.render_source`) includes it, right
  after ``core_service.cuh``, when the env source (with the headers it includes by a quoted path)
  or the user code names one of :data:`NAMES` outside comments, or when the caller asks
  (``compat_271=True`` to ``compile_and_load_cuda`` / ``load_cuda_from_source_code``);
- a self-contained main file (2.7.1's ``_compile``, :mod:`warp_drive.compat271.main_files`)
  includes it itself, as the shipped ``warp_drive/cuda_includes/test_build*.cu`` do.

The include line is part of the rendered text, so a build with the header and one without have
different cache keys. Launching a 2.7.1 kernel name from a module built without the header raises
:class:`~warp_drive.errors.KernelNotBuiltError` with :func:`not_built_message`, which names the
fix. The CPU backend's NumPy twins (:mod:`warp_drive.compat271.cpu_kernels`) are always there.
"""

from __future__ import annotations

import re

from warp_drive.cuda.signature import strip_comments

#: The header, in ``warp_drive/cuda/core``.
HEADER = "compat_271.cuh"

#: WarpDrive 2.7.1's built-in kernels kept under their names with their parameter lists
#: (``sample_actions`` is not among them: that name is this package's sampler kernel).
COMPAT_FUNCTIONS: tuple[str, ...] = (
    "reset_in_float_when_done_2d",
    "reset_in_int_when_done_2d",
    "reset_in_float_when_done_3d",
    "reset_in_int_when_done_3d",
    "log_one_step_in_float",
    "log_one_step_in_int",
    "init_random",
    "free_random",
)

#: Every name the header defines for 2.7.1 code (its ``wk*`` helpers but ``wkMaxBlocks`` are its
#: own); code that names one of them gets the header.
NAMES: tuple[str, ...] = (
    "getEnvID",
    "getAgentID",
    "getRankInEnv",
    "get_flattened_array_index",
    "wkMaxBlocks",
    "__sync_env_threads",
    *COMPAT_FUNCTIONS,
)

#: The line a rendered translation unit holds when the rule includes the header.
INCLUDE_LINE = f'#include "{HEADER}"  // WarpDrive 2.7.1\'s kernel-side names and kernels\n'

_NAME = re.compile(r"\b(" + "|".join(re.escape(n) for n in NAMES) + r")\b")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"(?:[^"]*/)?' + re.escape(HEADER) + '"', re.M)


def names_used(*code: str) -> list[str]:
    """The names of :data:`NAMES` that ``code`` uses outside comments, sorted."""
    return sorted({m.group(1) for text in code for m in _NAME.finditer(strip_comments(text))})


def includes_header(source: str) -> bool:
    """True when ``source`` includes ``compat_271.cuh`` (outside comments; any folder prefix)."""
    return _INCLUDE.search(strip_comments(source)) is not None


def not_built_message(name: str) -> str:
    """Why kernel ``name`` (one of :data:`COMPAT_FUNCTIONS`) is not in a module, and the fix."""
    return (
        f"'{name}' is one of WarpDrive 2.7.1's kernels ({HEADER}), which this module was built without: the "
        f"header is compiled in only when the code names a 2.7.1 symbol (getEnvID, __sync_env_threads, "
        f"{name}, ...) or the build asks for it. Build with fm.compile_and_load_cuda(..., compat_271=True) or "
        f"fm.load_cuda_from_source_code(code, compat_271=True); a self-contained main file includes "
        f"\"{HEADER}\" after \"core_service.cuh\". warp_drive's own Sampler, EnvironmentReset and "
        f"LogController do not need it."
    )
