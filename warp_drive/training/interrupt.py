"""Stopping a training run cleanly: SIGINT and SIGTERM end it at the next iteration boundary, or
within an iteration when iterations are slow.

While :meth:`Trainer.train` runs (in the main thread), the first SIGINT (Ctrl-C) or SIGTERM (what
a cluster scheduler sends before preemption) only sets a flag; the trainer finishes the current
iteration, writes a checkpoint in which counters, weights, optimizer states, env replicas and
metric files agree, and raises :class:`TrainingInterrupted`. A second signal aborts at once (the
checkpoint files on disk stay intact: every write is atomic). The previous handlers are restored
when ``train`` returns.

Slow iterations (:data:`warp_drive.training.run.long_runs.SLOW_ITERATION_S` or more, one process): the
trainer checkpoints every iteration boundary and allows a stop inside the iteration
(:meth:`StopRequest.allow_abort`): the rollout checks at every env step and the update at every
chunk (:func:`check_abort`), the partial iteration is discarded, and the checkpoint of the
boundary it started from is the run's latest (``TrainingInterrupted.checkpoint``). The Lightning CLI
uses the same request, checks and rule (:meth:`~warp_drive.training.run.trainer.Trainer.stops_inside_iterations`;
:mod:`warp_drive.training.lightning.cli_runs`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from types import FrameType
from typing import Any, Iterator

logger = logging.getLogger(__name__)

#: Signals that request a stop at the next iteration boundary.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def signal_exit_code(signum: int) -> int:
    """The shell's code for death by signal ``signum``: ``128 + signum`` (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


class SignalExit:
    """Mixin of the exceptions a signal causes: :attr:`signum` and :attr:`exit_code`
    (:func:`signal_exit_code`)."""

    def __init__(self, signum: int, message: str) -> None:
        self.signum = int(signum)
        super().__init__(message)

    @property
    def exit_code(self) -> int:
        return signal_exit_code(self.signum)


class TrainingInterrupted(SignalExit, KeyboardInterrupt):
    """Training stopped at an iteration boundary after SIGINT or SIGTERM; a checkpoint was written.

    A ``KeyboardInterrupt`` (so ``except Exception`` blocks do not swallow it).

    Attributes:
        signum: the signal received.
        iteration: iterations completed (the checkpoint's iteration).
        checkpoint: the checkpoint written (``None`` on ranks that write none).
        exit_code: the shell's code for death by that signal (:func:`signal_exit_code`).
    """

    def __init__(self, signum: int, iteration: int, checkpoint: Any = None) -> None:
        self.iteration = int(iteration)
        self.checkpoint = checkpoint
        super().__init__(signum, f"{signal_name(signum)} received: stopped after iteration {iteration}"
                         + (f", checkpoint {checkpoint}" if checkpoint else ""))


class IterationAborted(SignalExit, BaseException):
    """Raised by :func:`check_abort` at an env-step or update-chunk boundary: a stop was requested
    while a slow iteration ran whose starting boundary is checkpointed; the caller (``Trainer.train``,
    the Lightning CLI) discards the partial iteration (see :meth:`StopRequest.allow_abort`).

    A ``BaseException`` (``except Exception`` blocks do not swallow it) but not a ``KeyboardInterrupt``:
    Lightning's ``fit`` re-raises other exceptions after its teardown, where a ``KeyboardInterrupt``
    would end the process with exit code 1."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum, f"{signal_name(signum)} received inside an iteration")


class AbortedBySignal(SignalExit, KeyboardInterrupt):
    """A second SIGINT or SIGTERM: the run aborts at once, without a checkpoint (the files on disk stay
    intact: every write is atomic). The command-line scripts exit with :attr:`exit_code`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum, f"{signal_name(signum)} received again: aborted without a checkpoint")


class StoppedOutsideTraining(SignalExit, KeyboardInterrupt):
    """SIGTERM or SIGINT while a command line starts, builds, evaluates or summarises (outside
    ``Trainer.train``, whose :class:`StopRequest` takes over while it runs): the command stops at
    once and exits with :attr:`exit_code` (143 / 130) and one line, as Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum, f"{signal_name(signum)} received outside training: stopped (no training step was lost)")


def _stop_outside_training(signum: int, frame: FrameType | None) -> None:
    raise StoppedOutsideTraining(signum)


@contextlib.contextmanager
def stop_outside_training() -> Iterator[None]:
    """What the command lines run in, from their first line: SIGTERM and SIGINT raise
    :class:`StoppedOutsideTraining` (the default SIGTERM kills the process silently, with status -15);
    the previous handlers come back at the end. Main thread only."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, _stop_outside_training)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def exit_code_of(interrupt: KeyboardInterrupt) -> int:
    """The exit code for a stop: that of the signal received (:class:`TrainingInterrupted`,
    :class:`AbortedBySignal`), else 130 (a plain ``KeyboardInterrupt`` is Ctrl-C's)."""
    signum = getattr(interrupt, "signum", None)
    return signal_exit_code(signum if signum is not None else signal.SIGINT)


_ABORTABLE: list[StopRequest] = []  # the stop request that currently allows stopping inside an iteration


def check_abort() -> None:
    """Called at every env step of a rollout and every chunk of an update: raises
    :class:`IterationAborted` when a stop was requested and mid-iteration stops are allowed."""
    if _ABORTABLE and _ABORTABLE[0].signum is not None:
        raise IterationAborted(_ABORTABLE[0].signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class StopRequest:
    """Context manager that turns SIGINT/SIGTERM into a stop request checked at iteration boundaries.

    Handlers are installed only in the main thread of the main interpreter (elsewhere Python does
    not allow it, and the request can still be made by calling :meth:`request`).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def request(self, signum: int = signal.SIGINT) -> None:
        """Ask for a stop at the next boundary (what the signal handler does)."""
        if self.signum is None:
            self.signum = int(signum)

    def allow_abort(self, allowed: bool) -> None:
        """While ``allowed``, a requested stop ends the running iteration at its next env step or
        update chunk (:func:`check_abort`); the trainer allows it only when the iteration's starting
        boundary is checkpointed."""
        _ABORTABLE.clear()
        if allowed:
            _ABORTABLE.append(self)

    #: What a stop at an iteration boundary writes (named in the handler's message).
    checkpoint_name = "a checkpoint"

    def second_signal(self, signum: int) -> BaseException:
        """The exception a second signal raises (:class:`AbortedBySignal`)."""
        return AbortedBySignal(signum)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:  # second signal: abort now (checkpoint writes are atomic)
            logger.warning("%s received again: aborting without a new checkpoint", signal_name(signum))
            raise self.second_signal(signum)
        self.request(signum)
        where = ("at the next env step (the iteration in progress is discarded; the checkpoint of its start is kept)"
                 if self in _ABORTABLE else f"after this iteration and writing {self.checkpoint_name}")
        logger.warning("%s received: stopping %s (send it again to abort at once)", signal_name(signum), where)

    def __enter__(self) -> StopRequest:
        """Installs the handlers; entering again installs them again and keeps the ones first replaced."""
        if self.enabled and threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                try:
                    self._previous.setdefault(sig, signal.signal(sig, self._handler))
                except (ValueError, OSError):  # pragma: no cover - not the main interpreter
                    pass
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.allow_abort(False)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


_FLAG_GROUP: tuple[Any, Any] = (None, None)  # (the default group it was made for, the gloo group)


def agree_across_ranks(flags: list[int], device: Any = None) -> list[int]:
    """Each of ``flags`` maxed over every rank (identity without a process group), so that ranks stop
    and save at the same iteration.

    Under NCCL the flags travel through a gloo group of the same ranks (created on the first call,
    which every rank makes at its first iteration boundary): a host-side exchange that does not
    wait for the GPU, so iterations still overlap.
    """
    import torch
    import torch.distributed as dist

    global _FLAG_GROUP
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return [int(f) for f in flags]
    group = None
    if dist.get_backend() != "gloo":
        if _FLAG_GROUP[0] is not dist.group.WORLD:  # first call, or a new default process group
            from warp_drive.training.distributed import hold_backends, on_leave

            _FLAG_GROUP = (dist.group.WORLD, dist.new_group(backend="gloo"))
            hold_backends()  # its threads are stopped before the interpreter exits
            on_leave(_forget_flag_group)
        group = _FLAG_GROUP[1]
    t = torch.tensor([int(f) for f in flags], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return [int(v) for v in t.tolist()]


def _forget_flag_group() -> None:
    """The process left its group: the flag group of :func:`agree_across_ranks` goes with it."""
    global _FLAG_GROUP
    _FLAG_GROUP = (None, None)
