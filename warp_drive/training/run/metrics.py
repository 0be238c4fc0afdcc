"""Training metrics: one row per iteration to JSONL, CSV, TensorBoard and a console table.

Metric keys are slash-separated, ``"<group>/<name>"`` (e.g. ``"runner/episode_return_mean"``,
``"perf/env_steps_per_s"``); the group is a policy tag or ``"perf"``. Every row also holds
``"iteration"`` and ``"timestep"``, which lead the row in every format.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import numbers
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

from warp_drive.errors import ConfigError, DataShapeError, DataTypeError, WarpDriveError

logger = logging.getLogger(__name__)

Number = Union[int, float]
INDEX_KEYS = ("iteration", "timestep")
SUPPORTED_FORMATS = ("csv", "jsonl")
JSONL_NAME, CSV_NAME, TENSORBOARD_DIR = "metrics.jsonl", "metrics.csv", "tensorboard"


def _to_numbers(metrics: Mapping[str, Any]) -> dict[str, Number]:
    """Metric values as Python ints/floats, one host sync per tensor device (raises as :meth:`MetricsWriter.write`)."""
    torch: Any = sys.modules.get("torch")  # no tensor can exist unless torch is already imported
    out: dict[str, Any] = {}
    by_device: dict[Any, dict[str, Any]] = {}
    for key, value in metrics.items():
        if not isinstance(key, str) or key in INDEX_KEYS:
            raise ConfigError(f"metric key {key!r} is invalid: use a str other than {INDEX_KEYS}")
        if hasattr(value, "shape") and math.prod(value.shape) != 1:
            raise DataShapeError(f"metric {key!r} has shape {tuple(value.shape)}; expected 1 value")
        out[key] = None  # keeps the caller's key order
        if torch is not None and isinstance(value, torch.Tensor):
            by_device.setdefault(value.device, {})[key] = value
            continue
        if hasattr(value, "shape") and hasattr(value, "item"):  # numpy scalar or array
            value = value.item()
        if isinstance(value, numbers.Integral):  # bool included
            out[key] = int(value)
        elif isinstance(value, numbers.Real):
            out[key] = float(value)
        else:
            raise DataTypeError(f"metric {key!r} is a {type(value).__name__}; expected an int, float or 0-d tensor")
    for device, tensors in by_device.items():
        dtype = torch.float32 if device.type == "mps" else torch.float64
        flat = [t.detach().reshape(()).to(dtype) for t in tensors.values()]
        for (key, tensor), value in zip(tensors.items(), torch.stack(flat).cpu().tolist()):
            is_float = tensor.is_floating_point() or tensor.is_complex()
            out[key] = float(value) if is_float else int(value)
    return out


def format_number(value: Number) -> str:
    """Formats a number compactly: 3 significant digits, thousands separators from 1,000.

    Examples: ``0.0123``, ``-4.57``, ``123,457``, ``1.2e-05``, ``nan``; ints in full (``48,000``).
    """
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    value = float(value)
    if math.isfinite(value) and abs(value) >= 999.5:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_table(iteration: int, timestep: int, metrics: Mapping[str, Number]) -> str:
    """One row of metrics (numbers or 0-d tensors) as a console table: a header line, then one block
    per key prefix before "/" (in first-seen order, keys without a "/" under ``"misc"``) with names
    left-aligned and values right-aligned."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for key, value in _to_numbers(metrics).items():
        group, _, name = key.partition("/") if "/" in key else ("misc", "", key)
        groups.setdefault(group, []).append((name, format_number(value)))
    header = f"iteration {iteration:,} | timestep {timestep:,}"
    rows = [(name, text) for items in groups.values() for name, text in items]
    name_w = max([len(n) for n, _ in rows], default=0)
    value_w = max([len(t) for _, t in rows], default=0)
    rule = "-" * max(len(header), name_w + value_w + 4)
    lines = [rule, header, rule]
    for group, items in groups.items():
        lines.append(f"{group}")
        lines.extend(f"  {name:<{name_w}}  {text:>{value_w}}" for name, text in items)
    lines.append(rule)
    return "\n".join(lines)


def _parse_csv_value(text: str) -> Number:
    try:
        return int(text)
    except ValueError:
        return float(text)


def read_metrics(path: str | Path) -> list[dict[str, Number]]:
    """Metric rows, one dict each, from ``metrics.jsonl``, ``metrics.csv`` or the directory that holds
    them (JSONL first); CSV cells left empty (keys the row did not have) are omitted.

    Raises:
        ConfigError: the file is missing or its suffix is neither ``.jsonl`` nor ``.csv``.
    """
    path = Path(path)
    if path.is_dir():
        found = [path / n for n in (JSONL_NAME, CSV_NAME) if (path / n).is_file()]
        if not found:
            raise ConfigError(f"no {JSONL_NAME} or {CSV_NAME} in directory {path}")
        path = found[0]
    if not path.is_file():
        raise ConfigError(f"metrics file {path} does not exist; pass a run's {JSONL_NAME}")
    if path.suffix in (".jsonl", ".json"):
        with path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            return [
                {k: _parse_csv_value(v) for k, v in row.items() if v not in ("", None)}
                for row in csv.DictReader(fh)
            ]
    raise ConfigError(f"metrics file {path} has suffix {path.suffix!r}; expected .jsonl or .csv")


def truncate_metrics(save_dir: str | Path, last_iteration: int) -> int:
    """Keeps, in a run's metric files, each iteration up to ``last_iteration`` exactly once.

    Used when a run resumes from a checkpoint of iteration ``last_iteration``: a kill can leave rows
    logged after it (they will be logged again), a torn last line (a JSONL line that does not parse,
    a CSV row of the wrong width or without its line end), or, from an earlier resume that was
    itself killed, an iteration twice (the later row is kept: the one the checkpoint's run wrote).
    Files are rewritten atomically, and only when something is dropped or a line end is missing.

    Returns:
        The number of rows dropped (JSONL and CSV counted separately).
    """
    save_dir = Path(save_dir)
    removed = 0
    jsonl = save_dir / JSONL_NAME
    if jsonl.is_file():
        text = jsonl.read_text(encoding="utf-8", errors="replace")
        lines = [line for line in text.splitlines() if line.strip()]
        keep = _kept(lines, lambda line: json.loads(line)["iteration"], last_iteration)
        if len(keep) != len(lines) or (text and not text.endswith("\n")) or len(lines) != len(text.splitlines()):
            _atomic_write_text(jsonl, "".join(line + "\n" for line in keep))
            removed += len(lines) - len(keep)
    csv_path = save_dir / CSV_NAME
    if csv_path.is_file():
        text = csv_path.read_text(encoding="utf-8", errors="replace")
        body_rows = list(csv.reader(io.StringIO(text, newline="")))
        if body_rows:
            header, body = body_rows[0], body_rows[1:]
            col = header.index("iteration") if "iteration" in header else None
            if body and not text.endswith("\n"):  # the last row lost its line end: a value may be cut
                body = body[:-1]
                removed += 1
            whole = [row for row in body if len(row) == len(header) and col is not None]  # else torn by a kill
            keep_rows = _kept(whole, lambda row: row[col], last_iteration)
            if len(keep_rows) != len(body) or not text.endswith("\n"):
                buf = io.StringIO()
                csv.writer(buf).writerows([header, *keep_rows])
                _atomic_write_text(csv_path, buf.getvalue())
                removed += len(body) - len(keep_rows)
    return removed


def _kept(items: list[Any], iteration_of: Callable[[Any], Any], last_iteration: int) -> list[Any]:
    """The items up to ``last_iteration`` in file order, each iteration's last occurrence only; an
    item whose iteration does not parse (torn by a kill) is dropped."""
    rows: list[tuple[int, Any]] = []
    for item in items:
        try:
            iteration = int(iteration_of(item))
        except (ValueError, TypeError, KeyError):
            continue
        if iteration <= last_iteration:
            rows.append((iteration, item))
    last = {it: k for k, (it, _) in enumerate(rows)}
    return [row for k, (it, row) in enumerate(rows) if last[it] == k]


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _append_line(fd: int, text: str) -> None:
    """Appends one line with one ``write`` to an ``O_APPEND`` descriptor (a short write is completed or raises)."""
    data = text.encode("utf-8")
    while data:
        data = data[os.write(fd, data):]


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class MetricsWriter:
    """Appends one row of metrics per call to JSONL/CSV files, TensorBoard and the log.

    Files are opened in append mode, so a resumed run continues the same files. Each row goes to
    each file in one ``write`` call (a kill leaves a row whole or absent; nothing waits in a buffer).
    With ``enabled=False`` (non-zero ranks) nothing is created, written or logged.

    Example:
        >>> with MetricsWriter("runs/exp1") as writer:
        ...     writer.write(0, 4000, {"runner/episode_return_mean": 1.5,
        ...                            "perf/env_steps_per_s": 9e5})
    """

    def __init__(
        self,
        save_dir: str | Path,
        formats: Sequence[str] = ("csv", "jsonl"),
        tensorboard: bool = False,
        console_every: int | None = 1,
        enabled: bool = True,
        purge_step: int | None = None,
    ) -> None:
        """Creates the writer (and ``save_dir`` when enabled).

        Args:
            save_dir: directory of ``metrics.jsonl``, ``metrics.csv`` and ``tensorboard/``.
            tensorboard: also log scalars with ``torch.utils.tensorboard.SummaryWriter``.
            console_every: log the table every this many writes; ``None`` or 0 for never.
            purge_step: TensorBoard drops its events at timesteps >= this (a resumed run; see
                :func:`truncate_metrics` for the CSV and JSONL files).

        Raises:
            ConfigError: unknown format, negative ``console_every``, or tensorboard requested
                but not installed.
        """
        if isinstance(formats, str):
            formats = (formats,)
        unknown = [f for f in formats if f not in SUPPORTED_FORMATS]
        if unknown:
            raise ConfigError(f"unknown metrics formats {unknown}; use {SUPPORTED_FORMATS}")
        if console_every is not None and console_every < 0:
            raise ConfigError(f"console_every is {console_every}; expected an int >= 0 or None")
        self.save_dir = Path(save_dir)
        self.formats = tuple(dict.fromkeys(formats))
        self.console_every = console_every or 0
        self.enabled = enabled
        self.rows_written = 0
        self._closed = False
        self._jsonl: int | None = None  # O_APPEND descriptors (one os.write per line)
        self._csv: int | None = None
        self._tb: Any = None
        self._csv_header: list[str] = []
        if not enabled:
            return
        self.save_dir.mkdir(parents=True, exist_ok=True)
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                raise ConfigError(
                    "tensorboard=True but TensorBoard is not installed: pip install tensorboard "
                    "(or pass tensorboard=False)"
                ) from exc
            self._tb = SummaryWriter(log_dir=str(self.save_dir / TENSORBOARD_DIR), purge_step=purge_step)
        if "jsonl" in self.formats:
            self._jsonl = _open_append(self.save_dir / JSONL_NAME)
        if "csv" in self.formats:
            csv_path = self.save_dir / CSV_NAME
            if csv_path.is_file() and csv_path.stat().st_size > 0:
                with csv_path.open(newline="", encoding="utf-8") as fh:
                    self._csv_header = next(csv.reader(fh), [])
            self._csv = _open_append(csv_path)

    @property
    def metrics_path(self) -> Path | None:
        """The file to read back or plot: ``metrics.jsonl`` if written, else ``metrics.csv``."""
        for fmt, name in (("jsonl", JSONL_NAME), ("csv", CSV_NAME)):
            if fmt in self.formats:
                return self.save_dir / name
        return None

    def write(self, iteration: int, timestep: int, metrics: Mapping[str, Any]) -> None:
        """Appends one row to every sink; ``timestep`` is the x axis of TensorBoard and plots, and
        ``metrics`` ``{"group/name": value}`` holds numbers or one-element tensors, fetched to the
        host with one ``torch.stack(...).cpu()`` per device.

        Raises:
            WarpDriveError: the writer is closed.
            ConfigError: a key is not a str, or is ``iteration`` or ``timestep``.
            DataShapeError: a value holds more than one element.
            DataTypeError: a value is not a number.
        """
        if not self.enabled:
            return
        if self._closed:
            raise WarpDriveError(f"MetricsWriter for {self.save_dir} is closed; create a new one")
        iteration, timestep = int(iteration), int(timestep)
        row: dict[str, Number] = {"iteration": iteration, "timestep": timestep}
        row.update(_to_numbers(metrics))
        if self._jsonl is not None:
            _append_line(self._jsonl, json.dumps(row) + "\n")
        if self._csv is not None:
            self._csv = self._write_csv(self._csv, row)
        if self._tb is not None:
            for key, value in row.items():
                if key not in INDEX_KEYS:
                    self._tb.add_scalar(key, value, global_step=row["timestep"])
            self._tb.flush()
        self.rows_written += 1
        if self.console_every and self.rows_written % self.console_every == 0 and logger.isEnabledFor(logging.INFO):
            values = {k: v for k, v in row.items() if k not in INDEX_KEYS}
            logger.info("\n%s", format_table(iteration, timestep, values))

    def _write_csv(self, fd: int, row: dict[str, Number]) -> int:
        new_keys = [k for k in row if k not in self._csv_header]
        rewrite = bool(new_keys and self._csv_header)  # the whole file again, under the union header
        path = self.save_dir / CSV_NAME
        old_rows = read_metrics(path) if rewrite else []
        self._csv_header += new_keys
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self._csv_header, restval="")
        if new_keys:  # a new file's header goes with its first row
            writer.writeheader()
        writer.writerows({k: repr(v) for k, v in r.items()} for r in [*old_rows, row])
        if not rewrite:
            _append_line(fd, buf.getvalue())
            return fd
        os.close(fd)
        _atomic_write_text(path, buf.getvalue())
        return _open_append(path)

    def close(self) -> None:
        """Flushes and closes every sink; calling it again does nothing."""
        if not self._closed:
            for fd in (self._jsonl, self._csv):
                if fd is not None:
                    os.close(fd)
            if self._tb is not None:
                self._tb.close()
        self._closed = True

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
