"""YAML reading for configs: safe loading, with `1e-3` read as a number.

PyYAML follows YAML 1.1, where `1e-3` (no dot) is a string. Run configs are full of learning
rates written that way, so the loader below adds the YAML 1.2 float pattern. Aliases are counted
before anything is built: a document that expands to more than :data:`MAX_NODES` values or
:data:`MAX_CHARS` characters of scalars (an alias bomb: a few KB of nested anchors naming each other,
or one long string named many times) or refers to itself is refused. A key given twice in one
mapping (a duplicated policy tag: PyYAML keeps the later one without a word) is refused too.
"""

from __future__ import annotations

import copy
import functools
import re
from importlib import resources
from typing import Any

import yaml

from warp_drive.errors import ConfigError
from warp_drive.utils.excerpt import brief

#: Most values (scalars, lists and mappings, each alias counted as the whole value it names) that
#: one YAML document may expand to.
MAX_NODES = 100_000
#: Most characters of scalar text (keys and values, each alias counted as the text it names) that one
#: YAML document may expand to.
MAX_CHARS = 4_000_000


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader that also resolves `1e-3`, `5E+2` style scalars as floats, and refuses a key given
    twice in one mapping (keys merged in with ``<<`` may still be overridden)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(f"key {brief(key)} is given twice in one mapping (lines {seen[key]} and {line}); "
                                  "YAML would keep the later one: remove or rename one of them.")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


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
    """Parses YAML text with the config loader.

    Raises:
        yaml.YAMLError: Invalid YAML.
        ConfigError: The document expands to more than :data:`MAX_NODES` values or refers to itself.
    """
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check_expanded_size(root: yaml.Node) -> None:
    """Counts the values ``root`` expands to, each shared (aliased) node once per use, without
    expanding anything: sizes are memoised per node, so the walk visits each node once."""
    sizes: dict[int, int] = {}
    chars: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            open_nodes.discard(id(node))
            children = _children(node)
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            chars[id(node)] = len(node.value) if isinstance(node, yaml.ScalarNode) else sum(chars[id(c)] for c in children)
            if sizes[id(node)] > MAX_NODES or chars[id(node)] > MAX_CHARS:
                what = f"{MAX_NODES} values" if sizes[id(node)] > MAX_NODES else f"{MAX_CHARS:,} characters"
                raise ConfigError(
                    f"the YAML expands to more than {what} (an alias bomb?) at line "
                    f"{node.start_mark.line + 1}; write the values out, or use fewer aliases.")
        elif id(node) in open_nodes:
            raise ConfigError(f"the YAML refers to itself through an alias at line {node.start_mark.line + 1}; "
                              "a config must be a tree: remove the alias.")
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


@functools.lru_cache(maxsize=1)
def _defaults_cached() -> dict[str, Any]:
    return yaml_loads(resources.files("warp_drive.config").joinpath("defaults.yaml").read_text())


def load_defaults() -> dict[str, Any]:
    """Returns a fresh deep copy of ``defaults.yaml``."""
    return copy.deepcopy(_defaults_cached())
