"""Bounded excerpts of values and texts for error messages.

A message that shows a user's value must stay one short line whatever the value is: a huge list,
a deeply nested mapping (a YAML alias bomb) or megabytes of text. :func:`brief` is a bounded
``repr()`` (it never builds the full one); :func:`excerpt` shortens a text that already exists.
"""

from __future__ import annotations

import reprlib
from typing import Any

#: Longest :func:`brief` text, in characters.
BRIEF_LIMIT = 80


class _BoundedRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:  # repr() of a huge int is slow or refused
        return super().repr_int(x, level) if x.bit_length() <= 256 else f"<int of {x.bit_length()} bits>"


_REPR = _BoundedRepr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 4
_REPR.maxstring = _REPR.maxother = 40
_REPR.maxlong = 24


def excerpt(text: str, limit: int = 200) -> str:
    """``text`` with whitespace runs collapsed, cut at a word boundary to at most ``limit``
    characters (``...`` marks a cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 4].rsplit(" ", 1)[0] or text[: limit - 4]
    return cut.rstrip(",;:") + " ..."


def brief(value: Any, limit: int = BRIEF_LIMIT) -> str:
    """A ``repr()`` of ``value`` of at most ``limit`` characters, built in bounded time: at most
    4 items per container, 3 levels deep, 40 characters per string (``...`` marks a cut)."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
