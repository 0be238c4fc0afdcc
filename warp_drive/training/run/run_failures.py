"""Failures after training started: a few lines, the traceback in the run folder, a documented exit code.

Once a run folder holds a run (training started, or ``--resume`` named one), an error that ends the
command-line scripts is reported by :meth:`RunFailures.call` on at most four lines on stderr::

    error: disk full while writing checkpoint_00000003.pt (OSError ENOSPC)
    intact: /runs/x/checkpoint_latest.pt (iteration 2)
    resume: python -m warp_drive.training.example_training_script --resume /runs/x
    traceback: /runs/x/error.log (--debug prints it)

and the process exits with the code of its class (the ``EXIT_*`` constants, the table "Exit codes"
of ``docs/config_reference.md``). The full traceback is appended to ``<run folder>/error.log`` (or, when
the folder is gone or unwritable, to a file in the system's temporary folder).
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

logger = logging.getLogger(__name__)

EXIT_OTHER = 1  #: anything else (a bug): still a short message and the log file
EXIT_USAGE = 2  #: config, command line, env arguments, resume mismatch, missing checkpoint (before or after start)
EXIT_IO = 3  #: disk full, run folder gone or unwritable, another OS-level read/write failure
EXIT_CHECKPOINT = 4  #: a corrupt, truncated, foreign or unsafe checkpoint
EXIT_NONFINITE = 5  #: a NaN or infinity stopped training (NonFiniteError)
EXIT_DEVICE = 6  #: a CUDA / device error (out of GPU memory, illegal address, driver error, no device)

ERROR_LOG = "error.log"

_IO_WHAT = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied", errno.EIO: "I/O error"}
_DEVICE_WORDS = ("cuda", "cublas", "cudnn", "nccl", "device-side assert", "illegal memory access")


def one_line(err: BaseException, limit: int = 1000) -> str:
    """The error's message on one line (whitespace collapsed), cut to ``limit`` characters."""
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def os_error_in(err: BaseException) -> OSError | None:
    """The error itself or the first OSError it was raised from or during (``torch.save`` on a full disk
    raises OSError during or after its own RuntimeError)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno is not None:
            return e
        todo += [e.__cause__, e.__context__]
    return None


def is_device_error(err: BaseException) -> bool:
    from warp_drive.errors import CUDACompileError, DeviceUnavailableError, GeometryError

    if isinstance(err, (CUDACompileError, DeviceUnavailableError, GeometryError)):
        return True
    if type(err).__module__.startswith("pycuda"):
        return True
    return isinstance(err, RuntimeError) and any(w in str(err).lower() for w in _DEVICE_WORDS)


def file_written(err: BaseException) -> str | None:
    """The file that :func:`~warp_drive.training.run.checkpoint.atomic_save` was writing when ``err`` was
    raised (a full disk's OSError names no file), else None."""
    from warp_drive.training.run.checkpoint import atomic_save

    for e in (err, err.__cause__, err.__context__):
        for frame, _ in traceback.walk_tb(e.__traceback__ if e is not None else None):
            if frame.f_code is atomic_save.__code__:
                return str(frame.f_locals.get("path", "")) or None
    return None


def describe_io(err: OSError, run_dir: Path | None, written: str | None = None) -> str:
    """``disk full while writing checkpoint_00000003.pt (OSError ENOSPC)`` and the like; ``written``:
    the file being written, when the error does not name it."""
    target = written or err.filename
    name = Path(target).name if target else "a file"
    code = errno.errorcode.get(err.errno, str(err.errno))
    kind = type(err).__name__
    if run_dir is not None and not run_dir.is_dir():
        return f"the run folder {run_dir} is gone (deleted or unmounted) while writing {name} ({kind} {code})"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        where = run_dir if run_dir is not None else Path(err.filename or ".").parent
        return f"the run folder {where} is not writable ({_IO_WHAT[err.errno]}) while writing {name} ({kind} {code})"
    what = _IO_WHAT.get(err.errno, err.strerror or "I/O failure")
    return f"{what} while writing {name} ({kind} {code})"


def reason_of(err: BaseException) -> str:
    """A :class:`~warp_drive.errors.CheckpointError`'s ``reason`` (or the one of the error it wraps)."""
    return getattr(err, "reason", "") or getattr(err.__cause__, "reason", "")


def classify(err: BaseException, run_dir: Path | None = None) -> tuple[int, str]:
    """The exit code of ``err``'s class and one line saying what happened."""
    from warp_drive.errors import CheckpointError, NonFiniteError, WarpDriveError

    if isinstance(err, CheckpointError):
        broken = reason_of(err) in ("corrupt", "unsafe", "format")
        return (EXIT_CHECKPOINT if broken else EXIT_USAGE), one_line(err)
    if isinstance(err, NonFiniteError):
        return EXIT_NONFINITE, one_line(err)
    if is_device_error(err):
        return EXIT_DEVICE, f"CUDA/device error: {one_line(err, 300)}"
    os_err = os_error_in(err)
    if os_err is not None:
        return EXIT_IO, describe_io(os_err, run_dir, file_written(err) or file_written(os_err))
    if isinstance(err, WarpDriveError):
        return EXIT_USAGE, one_line(err)
    return EXIT_OTHER, f"unexpected {type(err).__name__}: {one_line(err, 300)}"


def newest_intact_checkpoint(run_dir: Path) -> tuple[Path, int] | None:
    """The checkpoint ``--resume run_dir`` would use and its iteration, or None (its fallback warnings muted)."""
    from warp_drive.errors import WarpDriveError
    from warp_drive.training.run.checkpoint import resolve_checkpoint

    quiet = logging.getLogger("warp_drive.training.run.checkpoint")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        path, state = resolve_checkpoint(run_dir)
        return path, int(state["iteration"])
    except (WarpDriveError, OSError, KeyError, TypeError, ValueError):
        return None
    finally:
        quiet.setLevel(level)


def write_log(run_dir: Path | None, err: BaseException) -> Path | None:
    """Appends the full traceback to ``run_dir/error.log`` (else a temporary file); its path, or None."""
    text = (f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {' '.join(sys.argv)}\n"
            + "".join(traceback.format_exception(err)))
    if run_dir is not None and run_dir.is_dir():
        try:
            with open(run_dir / ERROR_LOG, "a", encoding="utf-8") as f:
                f.write(text)
            return run_dir / ERROR_LOG
        except OSError as log_err:
            logger.debug("cannot write %s: %s", run_dir / ERROR_LOG, log_err)
    try:
        fd, path = tempfile.mkstemp(prefix="warp_drive_error_", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(path)
    except OSError as log_err:
        logger.debug("cannot write a traceback file: %s", log_err)
        return None


def resume_folder(resume: str | None) -> Path | None:
    """The run folder that ``--resume`` names (a folder, or the folder of a checkpoint file), if it exists."""
    if not resume:
        return None
    path = Path(resume).expanduser().resolve()
    folder = path if path.is_dir() else path.parent
    return folder if path.exists() and folder.is_dir() else None


@dataclass
class RunFailures:
    """Explains failures of a run whose folder is known: every error once :meth:`started` was called,
    and a :class:`~warp_drive.errors.CheckpointError` of ``--resume``'s ``folder`` before; other
    errors pass through unchanged (the scripts' one- or two-line messages, exit 2).

    ``resume``: the command that continues the run in a folder; ``find_intact``: the newest intact
    checkpoint of a folder and its iteration.
    """

    resume: Callable[[Path], str]
    debug: bool = False
    folder: Path | None = None
    find_intact: Callable[[Path], tuple[Path, int] | None] = newest_intact_checkpoint
    training: bool = False

    def started(self, folder: Path) -> None:
        """Training has started in ``folder``: from now on every error is reported."""
        self.folder, self.training = Path(folder), True

    def call(self, body: Callable[[], int]) -> int:
        """``body()``'s exit code; an error once :attr:`folder` is known is reported (:meth:`report`)."""
        try:
            return body()
        except Exception as err:  # noqa: BLE001 - every failure of a started run gets its lines and log
            from warp_drive.errors import CheckpointError

            if self.folder is None or not (self.training or isinstance(err, CheckpointError)):
                raise  # before training, only --resume's checkpoint errors concern the run folder
            return self.report(err)

    def report(self, err: BaseException) -> int:
        code, what = classify(err, self.folder)
        log = write_log(self.folder, err)
        if self.debug:
            traceback.print_exception(err, file=sys.stderr)
        lines = [f"error: {what}"]
        intact = self.find_intact(self.folder) if self.folder is not None and self.folder.is_dir() else None
        if intact is None:
            lines.append(f"intact: no readable checkpoint in {self.folder}; start a new run")
        else:
            lines.append(f"intact: {intact[0]} (iteration {intact[1]})")
            hint = (" (the checkpoint's own config: leave out --env/--config and the differing overrides)"
                    if reason_of(err) == "mismatch" else "")
            lines.append(f"resume: {self.resume(self.folder)}{hint}")
        lines.append(f"traceback: {log} (--debug prints it)" if log else "traceback: not saved (--debug prints it)")
        print("\n".join(lines), file=sys.stderr, flush=True)
        return code
