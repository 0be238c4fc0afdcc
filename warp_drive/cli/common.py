"""What the command-line programs share: the run-source arguments, both spellings of a flag, the
logging of a script, and expected errors as one- or two-line messages (exit code 2)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, Callable, Sequence

from warp_drive.errors import WarpDriveError
from warp_drive.training.interrupt import SignalExit, exit_code_of


def add_run_source_arguments(p: argparse.ArgumentParser, required: bool = True, env_names: Sequence[str] = ()) -> None:
    """``--env`` | ``--config``, dotted overrides and ``--backend`` (shared by the training CLIs);
    ``env_names``, the example envs, are listed in ``--env``'s help."""
    src = p.add_mutually_exclusive_group(required=required)
    names = f" (examples: {', '.join(env_names)})" if env_names else ""
    src.add_argument("--env", "-e", help="env: an example env name, my_pkg.my_module:MyEnv, a name registered by "
                                         f"--import, or an entry point of group warp_drive.envs{names} (its run config is used)")
    src.add_argument("--config", "-c", help="path of a run config YAML (the env is its 'name', in any --env form)")
    p.add_argument("--import", dest="env_imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (its import registers your envs); repeatable")
    p.add_argument("overrides", nargs="*", help="dotted overrides, e.g. trainer.num_envs=500")
    p.add_argument("--backend", choices=("pycuda", "numba", "cpu"), default=None,
                   help="pycuda: the envs' CUDA C steps; numba: their Numba steps (numba-cuda); cpu: NumPy steps. "
                        "Default: pycuda when pycuda and a GPU are present, else cpu")


def add_flag(p: argparse.ArgumentParser, name: str, *aliases: str, **kwargs: Any) -> argparse.Action:
    """Adds ``--a_b`` together with its other spelling ``--a-b`` (the one policy of every CLI here)."""
    spellings = [name, *aliases]
    other = name.replace("_", "-") if "_" in name else name.replace("-", "_")
    if other != name and other not in spellings:
        spellings.insert(1, other)
    kwargs.setdefault("dest", name.lstrip("-").replace("-", "_"))
    return p.add_argument(*spellings, **kwargs)


def explain_error(err: BaseException) -> str | None:
    """The one- or two-line message for an expected error, or None for a bug (shown with its traceback)."""
    if isinstance(err, WarpDriveError):
        return f"error: {' '.join(str(err).split())}\n(add --debug to see the traceback)"
    from warp_drive.training.run.auto_scale import is_out_of_memory

    if is_out_of_memory(err):
        return (f"error: this configuration does not fit in GPU memory ({str(err).splitlines()[0]}). Lower "
                "trainer.num_envs or trainer.train_batch_size, or pass --auto_scale to find the largest configuration that fits.")
    return None


def configure_logging(quiet: bool) -> None:
    """Script output on stdout, in order: progress lines and notices (INFO), or warnings only when quiet."""
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(message)s", stream=sys.stdout)


def without_flag(argv: Sequence[str], spellings: Sequence[str]) -> list[str]:
    """``argv`` without a valued flag in any of its spellings (``--num_gpus 2``, ``--num-gpus=2``)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in spellings:
            skip = True
        elif not any(arg.startswith(s + "=") for s in spellings):
            out.append(arg)
    return out


def report_errors(body: Callable[[], int], debug: bool) -> int:
    """``body()``'s exit code; an expected error (:func:`explain_error`) prints one or two lines and
    returns 2 instead (``debug``, or a bug: raised with its traceback); a stop by a signal before
    training (Ctrl-C), or a second signal, prints its message and returns its exit code (130 / 143)."""
    try:
        return body()
    except Exception as err:  # noqa: BLE001 - expected errors become short messages, bugs keep their traceback
        message = None if debug else explain_error(err)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2
    except BaseException as stop:
        if not isinstance(stop, (KeyboardInterrupt, SignalExit)):
            raise
        print(stop if str(stop) else "interrupted", file=sys.stderr)
        return exit_code_of(stop)  # type: ignore[arg-type]
