"""What the Lightning CLI (:mod:`warp_drive.training.lightning.train`) shares with the main script's runs:
stops on SIGINT/SIGTERM with a checkpoint, the failure report, and the cpu backend's time estimate.

- :class:`LightningStop`: the first SIGINT or SIGTERM sets a flag (:class:`~warp_drive.training.interrupt.StopRequest`);
  :func:`run_callback`'s callback ends the epoch at the next iteration boundary (``trainer.should_stop``;
  agreed across ranks under DDP), Lightning's ``ModelCheckpoint`` writes ``last.ckpt`` at that epoch
  end, and the CLI exits 130 / 143. A second signal raises :class:`SignalAbort` at once (exit 130 / 143,
  no new checkpoint). Lightning's own SIGTERM handler (which would end the run with exit 1) is replaced
  while training.
- slow iterations (:func:`~warp_drive.training.run.long_runs.stops_inside`, as in ``Trainer.train``:
  5 s or more, one process): the callback writes ``last.ckpt`` at every iteration boundary and allows
  the stop inside the next iteration (:meth:`~warp_drive.training.interrupt.StopRequest.allow_abort`): the
  rollout's next env step or the update's next chunk raises
  :class:`~warp_drive.training.interrupt.IterationAborted` out of ``fit``, the partial iteration is
  discarded and ``last.ckpt`` (its starting boundary) is the latest checkpoint.
- :func:`newest_intact_lightning_checkpoint`: the failure report's ``intact:`` line
  (:class:`~warp_drive.training.run.run_failures.RunFailures` with the Lightning resume command).
- the callback's ``on_train_start`` times :func:`~warp_drive.training.run.long_runs.probe_iteration_seconds`
  on the cpu backend (one process) and logs the estimate line when the run would take minutes.
"""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path
from typing import Any, Callable

import torch

from warp_drive.training.run.checkpoint import verify_archive
from warp_drive.training.interrupt import (
    SignalExit,
    StopRequest,
    agree_across_ranks,
    signal_exit_code,
    signal_name,
)
from warp_drive.training.lightning.engine_state import CHECKPOINT_KEY
from warp_drive.training.run.long_runs import log_estimate, probe_iteration_seconds, stops_inside

logger = logging.getLogger(__name__)


class SignalAbort(SignalExit, BaseException):
    """A second SIGINT/SIGTERM: abort now (no new checkpoint); ``exit_code`` is ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum, f"{signal_name(signum)} received again: aborted")


class LightningStop(StopRequest):
    """:class:`StopRequest` whose second signal raises :class:`SignalAbort` (a ``KeyboardInterrupt``
    would make Lightning exit 1)."""

    checkpoint_name = "last.ckpt"

    def second_signal(self, signum: int) -> BaseException:
        return SignalAbort(signum)

    def reinstall(self) -> None:
        """Installs the handlers again (Lightning installs its own SIGTERM handler when ``fit`` starts;
        it restores ours at its teardown)."""
        self.__enter__()

    @property
    def exit_code(self) -> int:
        return signal_exit_code(self.signum or signal.SIGINT)


def run_callback(api: Any, stop: LightningStop, *, estimate: bool, on_start: Callable[[], None] | None = None) -> Any:
    """A callback (of ``api``'s distribution) that honours ``stop`` and, when ``estimate``, logs the time estimate
    (see the module's docstring); ``on_start()`` is called when training starts (after the engine was built and a
    checkpoint restored)."""

    class RunCallback(api.Callback):  # type: ignore[misc,name-defined]
        began = 0.0  # perf_counter at the last iteration boundary
        saved: tuple[int, str] | None = None  # (iteration, path) of the last boundary checkpoint written
        iteration_seconds: float | None = None  # the probe's estimate, then the last iteration's time

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            stop.reinstall()
            if on_start is not None:
                on_start()
            if estimate and trainer.world_size == 1:
                self.iteration_seconds = _log_probe_estimate(trainer, pl_module)
            self._boundary(trainer, pl_module)

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            if pl_module.engine is not None:  # the measured time decides whether the next iteration may be stopped inside
                self.iteration_seconds = time.perf_counter() - self.began
            if trainer.world_size > 1:  # every rank stops at the same iteration
                flag = agree_across_ranks([int(stop.signum or 0)])[0]
                if flag:
                    stop.request(flag)
            self._boundary(trainer, pl_module)

        def _boundary(self, trainer: Any, pl_module: Any) -> None:
            """An iteration boundary: a requested stop ends the epoch here; slow iterations of one process
            checkpoint it and may be stopped inside."""
            stop.allow_abort(False)
            if stop.signum is not None:
                trainer.should_stop = True
            elif trainer.world_size == 1 and self._checkpoint_if_slow(trainer, pl_module):
                stop.allow_abort(True)
            self.began = time.perf_counter()

        def _checkpoint_if_slow(self, trainer: Any, pl_module: Any) -> bool:
            """Writes this boundary's ``last.ckpt`` when the engine's iterations are slow; True then."""
            engine, saver = pl_module.engine, trainer.checkpoint_callback
            if engine is None or saver is None or not saver.save_last or not stops_inside(self.iteration_seconds, 1, engine):
                return False
            path = str(Path(saver.dirpath) / f"{saver.CHECKPOINT_NAME_LAST}{saver.FILE_EXTENSION}")
            boundary = (engine.iteration, path)
            if self.saved != boundary:
                if self.saved is None:
                    logger.info("iterations are slow: last.ckpt is written at every iteration boundary, so that "
                                "Ctrl-C / SIGTERM stops within seconds")
                trainer.save_checkpoint(path, weights_only=False)
                saver.last_model_path = path  # the ModelCheckpoint writes its last.ckpt there (not last-v1.ckpt)
                self.saved = boundary
            return True

    return RunCallback()


def _log_probe_estimate(trainer: Any, pl_module: Any) -> float | None:
    """Logs the estimate of the run's time from a probe; returns the probe's seconds per iteration."""
    engine = pl_module.engine
    if engine is None:
        return None
    per_iteration = probe_iteration_seconds(engine)
    ipe = int(pl_module.iterations_per_epoch or 1)
    iterations = max(0, int(trainer.max_epochs or 1) * ipe - int(trainer.current_epoch) * ipe)
    log_estimate(per_iteration, iterations, "from a probe of a few env steps; the Lightning CLI")
    return per_iteration


def checkpoint_iteration(path: Path) -> int | None:
    """The engine iteration stored in a Lightning checkpoint, or None when it is not an intact one."""
    try:
        verify_archive(path, "Lightning checkpoint")
        state = torch.load(path, map_location="cpu", weights_only=True)
        return int(state[CHECKPOINT_KEY]["iteration"])
    except Exception:  # noqa: BLE001 - a refused archive, a read or unpickling error of any kind: not intact
        return None


def newest_intact_lightning_checkpoint(folder: Path) -> tuple[Path, int] | None:
    """The newest intact ``*.ckpt`` under ``folder`` (``last.ckpt`` first among equals) and its iteration."""
    found = []
    for p in Path(folder).rglob("*.ckpt"):
        try:
            found.append((p.stat().st_mtime, p.name == "last.ckpt", p))
        except OSError:
            continue
    for _, _, path in sorted(found, reverse=True):
        iteration = checkpoint_iteration(path)
        if iteration is not None:
            return path, iteration
    return None
