"""Progress bar for training loops (tqdm when available, a plain iterator otherwise)."""

from __future__ import annotations

from typing import Iterable, TypeVar

T = TypeVar("T")


def progress_bar(iterable: Iterable[T], enabled: bool = True, desc: str = "training") -> Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar when ``enabled`` and tqdm is installed."""
    if not enabled:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover
        return iterable
    return tqdm(iterable, desc=desc, unit="iter", dynamic_ncols=True)
