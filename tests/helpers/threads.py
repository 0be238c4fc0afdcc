"""Torch's intra-op thread count set for a block and restored after it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

from warp_drive.utils import cpu_threads


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """``torch.set_num_threads(n)`` inside the block, also as ``WARP_DRIVE_NUM_THREADS`` (so env
    wrappers built in the block keep ``n``); after it (also on errors) the previous count, variable
    and :mod:`warp_drive.utils.cpu_threads` state."""
    with restored_threads():
        os.environ[cpu_threads.ENV_VAR] = str(n)
        torch.set_num_threads(n)
        yield


@contextlib.contextmanager
def restored_threads() -> Iterator[None]:
    """Torch's thread count, ``WARP_DRIVE_NUM_THREADS`` and the count last chosen by
    :mod:`warp_drive.utils.cpu_threads` as they were before the block, after it (also on errors)."""
    before, env, last = torch.get_num_threads(), os.environ.get(cpu_threads.ENV_VAR), cpu_threads._last_set
    try:
        yield
    finally:
        torch.set_num_threads(before)
        cpu_threads._last_set = last
        if env is None:
            os.environ.pop(cpu_threads.ENV_VAR, None)
        else:
            os.environ[cpu_threads.ENV_VAR] = env
