"""The files under a checkpoint: atomic writes, checksummed weights-only reads, 2.7.1's policy files.

Every file is written to a temporary name, flushed to disk and renamed into place
(:func:`atomic_save`), as a PyTorch zip archive whose records each carry a CRC-32 checksum. Every
file is read with :func:`safe_load`: :func:`verify_archive` checks each record against its
checksum before anything is unpickled, then ``torch.load(..., weights_only=True)`` refuses any
Python object other than tensors, numbers, strings and containers. Errors are
:class:`~warp_drive.errors.CheckpointError` with a ``reason`` (missing, corrupt, unsafe, format,
mismatch) and the ``path``.

The policy weight files ``<tag>_<timestep>.state_dict`` are 2.7.1's (:func:`write_policy_files`,
:func:`load_state_dict_file`). Whole checkpoints of a run folder (which file to resume from, whether
it fits the run) are :mod:`warp_drive.training.run.checkpoint`'s.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from warp_drive.compat271.reference_format import strip_ddp_prefix, to_reference_state_dict
from warp_drive.errors import CheckpointError, ConfigError
from warp_drive.training.distributed import unwrap
from warp_drive.training.models.fully_connected import FullyConnected
from warp_drive.utils.excerpt import excerpt

logger = logging.getLogger(__name__)

#: Version of the engine state a checkpoint holds (what :meth:`Engine.state_dict` writes).
FORMAT_VERSION = 2
#: Versions :func:`warp_drive.training.run.checkpoint.resolve_checkpoint` reads.
READABLE_VERSIONS = (1, 2)


def atomic_save(obj: Any, path: Path) -> None:
    """``torch.save`` to a temporary file in the same folder, flush it to disk, rename into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp_", suffix=".pt")
    crc32 = torch.serialization.get_crc32_options()
    try:
        torch.serialization.set_crc32_options(True)  # every record's checksum, which verify_archive reads
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        torch.serialization.set_crc32_options(crc32)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


#: How a file in PyTorch's legacy (pre-1.6, not zipped) format begins: its pickled magic number.
_LEGACY_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19"


def verify_archive(path: Path, what: str = "checkpoint") -> None:
    """Check a file's structure and every record's CRC-32 checksum before anything is unpickled.

    A file in PyTorch's legacy format (no checksums) passes unchecked.

    Raises:
        CheckpointError: ``reason="corrupt"``: not a PyTorch file (random or foreign bytes), cut
            off, or a record whose bytes do not match its checksum.
    """
    with open(path, "rb") as f:
        head = f.read(len(_LEGACY_MAGIC))
    if head.startswith(_LEGACY_MAGIC):
        return
    corrupt = f"{what} {str(path)!r} is corrupt or truncated"
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as err:
        raise checkpoint_error(f"{corrupt}: it is not a complete PyTorch archive (random bytes, a cut-off copy or "
                               "another kind of file)", "corrupt", path) from err
    if bad is not None:
        raise checkpoint_error(f"{corrupt}: its record {bad!r} does not match its CRC-32 checksum (the file changed "
                               "after it was written)", "corrupt", path)


def safe_load(path: str | Path, map_location: Any = "cpu", what: str = "checkpoint") -> Any:
    """``torch.load(path, weights_only=True)`` after :func:`verify_archive`, with errors that name the file.

    Raises:
        CheckpointError: the file is missing (``reason="missing"``), is corrupt or truncated
            (``"corrupt"``), or holds Python objects other than tensors and plain data, whose
            unpickling could run code (``"unsafe"``; nothing in it is executed).
    """
    path = Path(path)
    if not path.is_file():
        raise checkpoint_error(f"{what} {str(path)!r} does not exist; check the path", "missing", path)
    verify_archive(path, what)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        if "weights only" in str(err).lower() or "weights_only" in str(err).lower():
            raise checkpoint_error(
                f"refused to load {what} {str(path)!r}: it holds Python objects other than tensors, numbers, "
                "strings and containers (it is not a plain state_dict or checkpoint), and unpickling them could run "
                "code. Load only files written by "
                "warp_drive (or re-save the tensors of a file you trust with torch.save(model.state_dict()))",
                "unsafe", path) from err
        raise checkpoint_error(f"{what} {str(path)!r} is corrupt or truncated: its data does not unpickle "
                               f"({type(err).__name__})", "corrupt", path) from err
    except (RuntimeError, OSError, EOFError, ValueError, KeyError, IndexError, AttributeError, TypeError) as err:
        raise checkpoint_error(f"{what} {str(path)!r} is corrupt or truncated: PyTorch cannot read it "
                               f"({type(err).__name__}: {first_line(err)})", "corrupt", path) from err


def first_line(err: BaseException, limit: int = 200) -> str:
    """The first line of an error message, cut at a word boundary to at most ``limit`` characters
    (``...`` marks a cut)."""
    text = str(err).strip()
    return excerpt(text.splitlines()[0], limit) if text else type(err).__name__


def checkpoint_error(message: str, reason: str, path: Path | None = None) -> CheckpointError:
    """A :class:`CheckpointError` with ``reason`` (missing, corrupt, unsafe, format, mismatch) and ``path``."""
    err = CheckpointError(message)
    err.reason = reason  # type: ignore[attr-defined]
    err.path = path  # type: ignore[attr-defined]
    return err


def policy_file_state(model: torch.nn.Module) -> dict:
    """What a ``<tag>_<timestep>.state_dict`` file holds: 2.7.1's parameter names for our fully
    connected categorical policies (so 2.7.1 loads them too), the model's own names otherwise
    (Gaussian heads, observation normalizers and separate critics have no 2.7.1 counterpart)."""
    model = unwrap(model)
    if type(model) is FullyConnected and not model.action_spec.is_gaussian and model.obs_normalizer is None:
        return to_reference_state_dict(model)
    return model.state_dict()


def write_policy_files(save_dir: Path, policy_files: Mapping[str, tuple[int, torch.nn.Module]]) -> list[Path]:
    """Writes ``<save_dir>/<prefix>_<timestep>.state_dict`` for every ``{prefix: (timestep, model)}``
    (2.7.1's names and layout; prefix ``<tag>``, or ``<tag>_<role>`` for DDPG's actor and critic)."""
    paths = []
    for prefix, (timestep, model) in policy_files.items():
        path = Path(save_dir) / f"{prefix}_{timestep}.state_dict"
        atomic_save({k: v.detach().cpu() for k, v in policy_file_state(model).items()}, path)  # loads anywhere
        paths.append(path)
    return paths


def timestep_from_filename(path: str | Path) -> int | None:
    """The timestep 2.7.1 encodes in ``<tag>_<timestep>.state_dict`` names, or None if there is none."""
    stem = Path(path).name.split(".state_dict")[0]
    tail = stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


def load_state_dict_file(path: str | Path, device: torch.device | str = "cpu") -> dict:
    """Model weights from a ``.state_dict`` file (ours or 2.7.1's), read with ``weights_only=True``.

    Raises:
        CheckpointError: the file is missing, corrupt, refused as unsafe (see :func:`safe_load`),
            or not a mapping of parameter names to tensors (e.g. a full trainer checkpoint).
    """
    obj = safe_load(path, device, "model checkpoint (policy.<tag>.model.model_ckpt_filepath)")
    if not isinstance(obj, Mapping) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise checkpoint_error(f"{str(path)!r} is not a plain state_dict (a mapping of parameter names to tensors); a full "
                     "trainer checkpoint is restored with Trainer.load_checkpoint() or --resume", "corrupt", Path(path))
    return strip_ddp_prefix(obj)


def policy_files(policies: Mapping[str, Any]) -> dict[str, tuple[int, torch.nn.Module]]:
    """``{file prefix: (timestep, module)}``: what the ``<prefix>_<timestep>.state_dict`` files of
    ``policies`` (``{tag: policy}``) hold (prefix ``<tag>``, or ``<tag>_<role>`` for policies of several networks)."""
    return {(f"{tag}_{role}" if role else tag): (p.timestep, module)
            for tag, p in policies.items() for role, module in p.weight_files().items()}


def configured_weight_files(policies: Mapping[str, Any]) -> dict[str, str]:
    """``{tag: model.model_ckpt_filepath}`` of the policies' configs (empty paths for none)."""
    return {tag: getattr(getattr(p.config, "model", None), "model_ckpt_filepath", "") for tag, p in policies.items()}


def load_policy_weights(policies: Mapping[str, Any], ckpts_dict: Any, device: torch.device | str = "cpu") -> None:
    """Load policy weights into ``policies`` (``{tag: policy}``): ``ckpts_dict`` is ``{tag: path}`` (or
    ``{tag: {role: path}}`` for policies of several networks, e.g. DDPG's ``{"actor": path, "critic": path}``).

    Files may be 2.7.1's ``.state_dict`` files (its parameter names) or ours; they are read with
    ``torch.load(weights_only=True)``. As in 2.7.1, a policy's timestep (which drives its schedules)
    is taken from the file names ``<tag>[_<role>]_<timestep>.state_dict`` when they have one, and
    must agree across a policy's files. An empty path loads nothing.

    Raises:
        ConfigError: an unknown policy tag or role, a missing or unreadable file, weights that do
            not fit the policy's networks (the message lists the mismatching names), or files of
            one policy at different timesteps.
    """
    if not isinstance(ckpts_dict, Mapping):
        raise ConfigError(f"ckpts_dict must map policy tags to file paths; got {type(ckpts_dict).__name__}")
    for tag in ckpts_dict:
        if tag not in policies:
            raise ConfigError(f"checkpoint for unknown policy {tag!r}; policies: {', '.join(policies)}")
    for tag, paths in ckpts_dict.items():
        p = policies[tag]
        roles = p.weight_files()
        by_role = dict(paths) if isinstance(paths, Mapping) else {next(iter(roles)): paths}
        unknown = sorted(set(by_role) - set(roles))
        if unknown:
            raise ConfigError(f"policy '{tag}' has no network {unknown[0]!r} to load; its files are "
                              f"{{{', '.join(repr(r) for r in roles)}: path}}")
        steps = {}
        for role, path in by_role.items():
            if not path:
                continue
            state = load_state_dict_file(path, device)
            try:
                p.load_weights(role, state)
            except RuntimeError as err:
                raise ConfigError(f"{path} does not fit {f'the {role} of ' if role else ''}policy '{tag}' "
                                  f"({type(unwrap(roles[role])).__name__}): {err}") from err
            steps[role] = timestep_from_filename(path)
            logger.info("policy '%s' %sloaded from %s", tag, f"{role} " if role else "", path)
        found = {s for s in steps.values() if s is not None}
        if len(found) > 1:
            raise ConfigError(f"policy '{tag}': its files are at different timesteps {steps}; load files saved together")
        if found:
            p.timestep = found.pop()
