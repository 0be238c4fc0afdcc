"""Torch's thread count on the cpu backend: one decision, made where a cpu env wrapper is built.

Every CPU path (CLIs, Lightning, a ``Trainer`` built in Python, the interop adapters, the notebooks)
builds an :class:`~warp_drive.env.env_wrapper.EnvWrapper` on the cpu backend, whose constructor calls
:func:`apply_cpu_threads`. The first rule that applies decides (:func:`choose_threads`):

1. ``WARP_DRIVE_NUM_THREADS`` (a positive integer);
2. a count set with ``torch.set_num_threads`` before the wrapper was built: one that differs
   from torch's start-up count and from the last count set here (a count equal to torch's
   start-up count cannot be told apart from it: use the variable);
3. ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``: torch started with that count; it is kept;
4. otherwise one thread per :data:`ROWS_PER_THREAD` agent rows of a step (env replicas x agents),
   at least 1 and at most the cores this process may run on (``os.sched_getaffinity``, shared
   among the processes of a ``torchrun`` host: ``LOCAL_WORLD_SIZE``).

Why rule 4: small policies on a few hundred rows gain nothing from a second thread, and a thread
per core stalls whenever another process holds one of the cores (OpenMP threads wait for each
other at every parallel region); ``benchmarks/bench_cpu_threads.py`` measures it.

Nothing here runs at import.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

#: The environment variable that sets the thread count of every cpu-backend run.
ENV_VAR = "WARP_DRIVE_NUM_THREADS"

#: Agent rows (env replicas x agents) of one step per torch thread chosen automatically.
ROWS_PER_THREAD = 1024

#: Variables torch reads its start-up thread count from, in its order.
_TORCH_START_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

_last_set: int | None = None  # the count apply_cpu_threads last chose itself (rules 1 and 4)


@dataclass(frozen=True)
class ThreadChoice:
    """A thread count, the cores it was chosen for and why (the ``rule`` clause of :meth:`line`)."""

    threads: int
    cores: int
    rule: str
    chosen_here: bool = True  # rules 1 and 4; False: the user's torch / OpenMP setting is kept

    def line(self) -> str:
        """The one line that says what the cpu backend runs on."""
        s = "" if self.threads == 1 else "s"
        return (f"cpu backend: torch uses {self.threads} thread{s} ({self.cores} cores, os.sched_getaffinity; "
                f"{self.rule}; set {ENV_VAR} to change)")


def available_cores(environ: Mapping[str, str] | None = None) -> int:
    """Cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where that is
    missing), divided among the ``LOCAL_WORLD_SIZE`` processes ``torchrun`` started on this host."""
    environ = os.environ if environ is None else environ
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS and Windows have no affinity call
        cores = os.cpu_count() or 1
    local = environ.get("LOCAL_WORLD_SIZE", "1")
    procs = int(local) if local.isdigit() and int(local) > 0 else 1
    return max(1, cores // procs)


def threads_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """``WARP_DRIVE_NUM_THREADS`` as a count, or None when it is unset or empty.

    Raises:
        ConfigError: the value is not a positive integer (naming it and the fix).
    """
    environ = os.environ if environ is None else environ
    value = environ.get(ENV_VAR, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{ENV_VAR}={value!r} is not a number of torch threads; set it to a whole number >= 1 "
                          f"(e.g. {ENV_VAR}=1), or unset it to let warp_drive choose")
    return int(value)


def choose_threads(agent_rows: int, environ: Mapping[str, str] | None = None, cores: int | None = None) -> ThreadChoice:
    """Torch's thread count for a cpu-backend run of ``agent_rows`` agent rows per step (see the
    module docstring for the rules). ``environ``: default ``os.environ``; ``cores``: default
    :func:`available_cores`.

    Raises:
        ConfigError: ``WARP_DRIVE_NUM_THREADS`` is not a positive integer.
    """
    environ = os.environ if environ is None else environ
    cores = available_cores(environ) if cores is None else int(cores)
    explicit = threads_from_env(environ)
    if explicit is not None:
        return ThreadChoice(explicit, cores, f"{ENV_VAR}={explicit}")
    current = torch.get_num_threads()
    start_var = next((v for v in _TORCH_START_VARS if environ.get(v, "").strip()), None)
    start_value = environ.get(start_var, "").strip() if start_var else ""
    # torch's start-up count: the variable's, else its default pool size (what the inter-op pool reports)
    start = int(start_value) if start_value.isdigit() else torch.get_num_interop_threads()
    if current not in (start, _last_set):
        return ThreadChoice(current, cores, "set by torch.set_num_threads", chosen_here=False)
    if start_var:
        return ThreadChoice(current, cores, f"{start_var}={start_value}", chosen_here=False)
    threads = max(1, min(cores, int(agent_rows) // ROWS_PER_THREAD))
    return ThreadChoice(threads, cores, f"{agent_rows} agent rows a step, one thread per {ROWS_PER_THREAD}")


def apply_cpu_threads(agent_rows: int, announce: bool = True) -> ThreadChoice:
    """Decides (:func:`choose_threads`), sets ``torch.set_num_threads`` and, when ``announce``,
    logs :meth:`ThreadChoice.line` at INFO (the training CLIs print it). Returns the choice.

    Raises:
        ConfigError: ``WARP_DRIVE_NUM_THREADS`` is not a positive integer.
    """
    global _last_set
    choice = choose_threads(agent_rows)
    if choice.chosen_here:
        _last_set = choice.threads
        if torch.get_num_threads() != choice.threads:
            torch.set_num_threads(choice.threads)
    if announce:
        logger.info(choice.line())
    return choice
