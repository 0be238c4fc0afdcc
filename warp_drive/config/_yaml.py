"""YAML reading for configs: safe loading, with `1e-3` read as a number.

PyYAML follows YAML 1.1, where `1e-3` (no dot) is a string. Run configs are full of learning
rates written that way, so the loader below adds the YAML 1.2 float pattern.
"""

from __future__ import annotations

import copy
import functools
import re
from importlib import resources
from typing import Any

import yaml


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader that also resolves `1e-3`, `5E+2` style scalars as floats."""


_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def yaml_loads(text: str) -> Any:
    """Parses YAML text with the config loader."""
    return yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 - SafeLoader subclass


@functools.lru_cache(maxsize=1)
def _defaults_cached() -> dict[str, Any]:
    text = resources.files("warp_drive.config").joinpath("defaults.yaml").read_text()
    return yaml_loads(text)


def load_defaults() -> dict[str, Any]:
    """Returns a fresh deep copy of ``defaults.yaml``."""
    return copy.deepcopy(_defaults_cached())
