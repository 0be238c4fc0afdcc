"""Digests of kernel-cache entries: recorded when an entry is written, checked before it is served.

Next to each cached binary ``<key>_<arch>.cubin`` lies ``<key>_<arch>.cubin.sha256``, the SHA-256
of the bytes written. The digest is written first and both are renamed into place atomically, so
a binary is never visible without its digest; :func:`entry_intact` refuses one that does not match.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

DIGEST_SUFFIX = ".sha256"


def digest_path(entry: Path) -> Path:
    """Where the digest of cache entry ``entry`` is recorded."""
    return entry.with_name(entry.name + DIGEST_SUFFIX)


def write_atomically(path: Path, data: bytes, private: bool = False) -> None:
    """Write ``data`` to a temporary file next to ``path`` (mode 0600) and rename it into place;
    ``private``: a missing parent directory is created with mode 0700 (cache subdirectories)."""
    if private:
        path.parent.mkdir(mode=0o700, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp_")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_entry(entry: Path, data: bytes) -> None:
    """Store ``data`` as cache entry ``entry``, its digest first."""
    write_atomically(digest_path(entry), hashlib.sha256(data).hexdigest().encode())
    write_atomically(entry, data)


def entry_intact(entry: Path) -> bool:
    """True when ``entry``'s bytes match the digest recorded when it was written. A mismatch, an
    empty entry or a missing digest is logged (warning) and gives False: the entry is rebuilt."""
    record = digest_path(entry)
    try:
        if not stat.S_ISREG(os.lstat(record).st_mode):
            raise OSError("its digest record is not a regular file")
        recorded = record.read_text().strip()
        data = entry.read_bytes()
    except (OSError, UnicodeDecodeError) as err:
        logger.warning("kernel cache entry %s has no readable digest record (%s); not loading it, it is rebuilt",
                       entry, getattr(err, "strerror", None) or err)
        return False
    if not data or hashlib.sha256(data).hexdigest() != recorded:
        logger.warning("kernel cache entry %s (%d bytes) does not match the SHA-256 recorded when it was written "
                       "(tampered, truncated or empty); not loading it, it is rebuilt", entry, len(data))
        return False
    return True
