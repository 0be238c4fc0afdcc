"""Run folders: one per run, never shared by accident.

A run writes into ``saving.basedir/name/tag/<run name>`` (2.7.1's layout). What this module adds:

- the default run name is unique: ``<unix time>.<microseconds>-<pid>-<4 random hex digits>`` (two
  runs started in the same second get two folders, and so do two trainers of one process), and the command-line scripts create it atomically
  (:func:`claim_run_folder`: ``mkdir`` that fails on an existing folder, retried with a random suffix);
- the default ``saving.basedir`` is the user's own folder, :data:`DEFAULT_BASEDIR`
  (``~`` is expanded); a config that names ``saving.basedir`` (2.7.1's use ``/tmp``) keeps it;
- an existing run folder is only continued with ``--resume`` (:func:`claim_run_folder` refuses it
  with one line naming ``--resume`` and a fresh name);
- ``run_config.json`` is one JSON object, replaced atomically (:func:`write_run_config`), so it stays
  valid after any number of resumes;
- nothing is created before the command line and config are validated (:func:`check_writable`
  only tests), and :func:`release_if_empty` removes a claimed folder that a failed build left empty.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from warp_drive.utils.checks import as_path
from warp_drive.errors import ConfigError

#: ``saving.basedir`` when a config does not name one (``warp_drive/config/defaults.yaml``).
DEFAULT_BASEDIR = "~/warp_drive_runs"

#: How often :func:`claim_run_folder` retries a default name that another run took first.
CLAIM_ATTEMPTS = 20


def default_run_name() -> str:
    """``<unix time>.<microseconds>-<pid>-<4 random hex digits>``: sorts by start time, differs
    between processes and between calls."""
    now = time.time()
    return f"{int(now)}.{int(now * 1e6) % 1_000_000:06d}-{os.getpid()}-{secrets.token_hex(2)}"


def run_base(basedir: str, name: str, tag: str) -> Path:
    """``basedir/name/tag`` with ``~`` expanded."""
    return Path(basedir).expanduser() / name / tag


def check_writable(folder: Path) -> None:
    """``folder`` is a folder, or can be created: a file can be made in its nearest existing parent
    folder. Leaves nothing behind.

    Raises:
        ConfigError: naming the folder, what failed and the fix.
    """
    fix = "pass --results_dir with a writable folder (or set saving.basedir)"
    as_path(str(folder), "results folder")  # NUL bytes and over-long names: a typed error, not ValueError / OSError
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"results folder {folder} is a file, not a folder; {fix}")
    probe = folder
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"results folder {folder}: {probe} is a file, not a folder; {fix}")
    try:  # a file in the nearest existing folder, removed at once (os.access would pass /proc for root)
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".write_test_"):
            pass
    except OSError as err:
        raise ConfigError(f"results folder {folder} is not writable ({err.strerror or err}); {fix}") from err


def holds_run(folder: Path) -> bool:
    """``folder`` exists and has something in it (a previous run's files)."""
    return folder.is_dir() and any(folder.iterdir())


def claim_run_folder(folder: Path, *, default_name: bool, resume: bool) -> Path:
    """Creates the run folder and returns it (the one actually created).

    ``default_name``: ``folder``'s last part is a :func:`default_run_name`; if another run created it
    first, a random suffix is added until ``mkdir`` succeeds. Otherwise ``folder`` was named by the
    user: an empty or new folder is used, one that holds a run only with ``resume``.

    Raises:
        ConfigError: the folder holds a run and ``resume`` is false, or it cannot be created.
    """
    try:
        if resume or not default_name:
            if not resume and holds_run(folder):
                raise ConfigError(f"run folder {folder} already holds a run; continue it with --resume {folder}, "
                                  f"or start a new one in a fresh folder (e.g. --results_dir {fresh_name(folder)})")
            folder.mkdir(parents=True, exist_ok=True)
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        candidate = folder
        for _ in range(CLAIM_ATTEMPTS):
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                candidate = folder.with_name(f"{folder.name}-{secrets.token_hex(3)}")
    except OSError as err:
        raise ConfigError(f"results folder {folder} is not writable ({err.strerror or err}); pass --results_dir "
                          "with a writable folder (or set saving.basedir)") from err
    raise ConfigError(f"could not create a fresh run folder next to {folder} in {CLAIM_ATTEMPTS} attempts; "
                      "pass --results_dir with a new folder name")


def fresh_name(folder: Path) -> Path:
    """``folder`` with the first free ``-2``, ``-3``, ... suffix (a suggestion; nothing is created)."""
    k = 2
    while (candidate := folder.with_name(f"{folder.name}-{k}")).exists():
        k += 1
    return candidate


def release_if_empty(folder: Path) -> None:
    """Removes ``folder`` if it is an empty folder (a claimed run folder a failed build left behind)."""
    try:
        folder.rmdir()
    except OSError:  # not empty, already gone, or not ours to remove
        pass


def write_run_config(folder: Path, config: Mapping[str, Any], file_name: str) -> Path:
    """``config`` as one JSON object in ``folder/file_name``, replaced atomically (valid after any
    number of resumes: the file holds the config of the latest start)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name
    tmp = folder / f".{file_name}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(dict(config)) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
