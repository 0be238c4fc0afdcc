"""Loading run configs from YAML files or dicts, with dotted command-line overrides."""

from __future__ import annotations

import copy
import logging
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from warp_drive.utils import checks as chk
from warp_drive.config._yaml import load_defaults, yaml_loads
from warp_drive.config.algorithms import algorithm_entry
from warp_drive.config.schema import RunConfig
from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

#: Largest run config file read (bytes): the bundled ones are a few KB.
MAX_CONFIG_BYTES = 1 << 20
#: Sections whose keys are free (not checked against ``defaults.yaml``).
_FREE_PATHS = ("env", "policy.*.model.kwargs")


def load_run_config(
    path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
    overrides: Iterable[str] = (),
) -> RunConfig:
    """Loads, overrides, fills defaults and validates a run config.

    Args:
        path_or_dict: A YAML file path or an already-parsed mapping (not modified).
        overrides: ``"dotted.key=value"`` strings applied in order before validation, e.g.
            ``"trainer.num_envs=500"`` or ``"policy.runner.model.fc_dims=[32, 32]"``. The value
            is parsed as YAML (so ``1e-3`` is a float, ``[1, 2]`` a list, ``null`` None).

    Returns:
        The validated, frozen :class:`RunConfig`.

    Raises:
        ConfigError: Unreadable file, unknown key (in the file or an override) or invalid value.
    """
    return RunConfig.from_dict(load_raw_config(path_or_dict, overrides))


def load_raw_config(
    path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
    overrides: Iterable[str] = (),
) -> dict[str, Any]:
    """The run config as a plain dict with the overrides applied, before defaults and validation.

    Override keys are checked (unknown keys are errors); values are not.

    Raises:
        ConfigError: Unreadable file, invalid YAML, or an unknown override key.
    """
    if isinstance(path_or_dict, Mapping):
        raw = copy.deepcopy(dict(path_or_dict))
    else:
        path = Path(path_or_dict)
        text = _decode(read_config_bytes(path), path)
        raw = _yaml(text, f"run config {str(path)!r}", f"run config {str(path)!r} is not valid YAML")
        raw = dict(chk.require_mapping(raw, str(path)))
    for override in overrides:
        apply_override(raw, override)
    return raw


def read_config_bytes(path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of a run config file, read with a bounded read: a regular file of at most ``limit``
    bytes (a FIFO, a device such as /dev/zero or a folder would block or never end).

    Raises:
        ConfigError: the path is missing, unreadable, not a regular file or larger than ``limit``.
    """
    shown = chk.brief(str(path))
    try:
        chk.as_path(str(path), "--config")
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError(f"run config {shown} is not a regular file (a folder, FIFO or device); pass a YAML file.")
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise ConfigError(f"cannot read run config {shown}: {err.strerror or err}; check the path.") from None
    if len(data) > limit:
        raise ConfigError(f"run config {shown} is larger than {limit:,} bytes; a run config is a few KB of YAML: "
                          "pass the right file, or move the bulk of it into files your env reads.")
    return data


def _yaml(text: str, where: str, invalid: str) -> Any:
    """``yaml_loads(text)``; its errors as ConfigErrors that start with ``where`` (``invalid`` for bad YAML)."""
    try:
        return yaml_loads(text)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    except Exception as err:  # yaml.YAMLError and friends
        raise ConfigError(f"{invalid}: {chk.excerpt(str(err), 300)}") from err


def _decode(data: bytes, path: Path) -> str:
    """The text of a config file: UTF-8 (a byte-order mark is allowed), or UTF-16 with its mark."""
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"run config {str(path)!r} is not {'UTF-16' if encoding == 'utf-16' else 'UTF-8'} text (byte {err.start} is "
            f"{data[err.start:err.start + 1]!r}); save it as UTF-8."
        ) from None


def parse_override(override: str) -> tuple[list[str], Any]:
    """Splits ``"a.b.c=value"`` into ``(["a", "b", "c"], parsed_value)``.

    Raises:
        ConfigError: If there is no ``=`` or the key is empty.
    """
    if "=" not in override:
        raise ConfigError(
            f"override {chk.brief(override)} has no '='; write it as dotted.key=value, "
            "e.g. trainer.num_envs=500."
        )
    key, _, text = override.partition("=")
    key = key.strip()
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise ConfigError(
            f"override {chk.brief(override)} has an empty key part; e.g. trainer.num_envs=500."
        )
    where = f"override {chk.brief(override)}"
    value = _yaml(text, where, f"{where}: value {chk.brief(text)} is not valid YAML") if text.strip() else ""
    return parts, value


def _is_free(parts: list[str]) -> bool:
    patterns = (pattern.split(".") for pattern in _FREE_PATHS)
    return any(len(parts) > len(pat) and all(p == "*" or p == q for p, q in zip(pat, parts)) for pat in patterns)


def _policy_template(section: Any, tag: str) -> Mapping[str, Any]:
    """The keys an override may set in ``policy.<tag>``: ``defaults.yaml``'s, or those of the
    section's algorithm when its section class lists its own (``DEFAULTS``, e.g. DDPG's, SAC's)."""
    algorithm = section.get("algorithm") if isinstance(section, Mapping) else None
    if algorithm is not None:
        own = getattr(algorithm_entry(algorithm, f"policy.{tag}.algorithm").section_class(), "DEFAULTS", None)
        if own is not None:
            return own
    return load_defaults()["policy"]


def apply_override(raw: dict[str, Any], override: str) -> None:
    """Applies one ``dotted.key=value`` override to a raw (unvalidated) config dict in place.

    Keys are checked against ``defaults.yaml`` (``env.*`` and ``policy.<tag>.model.kwargs.*``
    are free), ``policy.<tag>.*`` against the defaults of that policy's algorithm;
    ``policy.<tag>`` must name a tag present in the config.

    Raises:
        ConfigError: Unknown key (with a did-you-mean hint) or malformed override.
    """
    parts, value = parse_override(override)
    template: Any = load_defaults()
    node: dict[str, Any] = raw
    for depth, part in enumerate(parts):
        dotted = ".".join(parts[: depth + 1])
        if _is_free(parts[: depth + 1]):
            template = None
        elif depth == 1 and parts[0] == "policy":
            tags = list(chk.require_mapping(raw.get("policy"), "policy"))
            if part not in tags:
                match = chk.closest_match(part, tags)
                hint = f"did you mean `policy.{match}`?" if match else "no close match."
                raise ConfigError(
                    f"unknown override key `{'.'.join(parts)}`: policy tag `{part}` is not in the "
                    f"config; {hint} Tags: {', '.join(map(str, tags)) or '(none)'}."
                )
            template = _policy_template(raw["policy"][part], part)
        else:
            if not isinstance(template, Mapping):
                parent = ".".join(parts[:depth])
                raise ConfigError(
                    f"override {chk.brief(override)}: `{parent}` is a value, not a section; "
                    f"override `{parent}` itself (e.g. {parent}=...)."
                )
            known = list(template)
            if part not in known:
                match = chk.closest_match(part, known)
                hint = f"did you mean `{'.'.join(parts[:depth] + [match])}`?" if match else "no close match."
                raise ConfigError(f"unknown override key `{'.'.join(parts)}` (`{dotted}` does not exist); {hint}")
            template = template[part]
        if depth == len(parts) - 1:
            node[part] = value
        else:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise ConfigError(
                    f"override {chk.brief(override)}: `{dotted}`={chk.brief(child)} is not a mapping, so "
                    f"`{'.'.join(parts)}` cannot be set; override `{dotted}` itself."
                )
            node = child
    logger.debug("config override %s", override)


def recursive_merge_config_dicts(config: dict[str, Any], default_config: Mapping[str, Any]) -> dict[str, Any]:
    """Fills the keys ``config`` lacks from ``default_config``, recursively, in place (2.7.1's helper).

    Keys already in ``config`` keep their values (nested mappings are merged the same way);
    unknown keys are kept, not checked: :func:`load_run_config` is what validates a config.

    Returns:
        ``config`` itself.

    Raises:
        ConfigError: ``config`` or ``default_config`` is not a mapping.
    """
    if not isinstance(config, dict) or not isinstance(default_config, Mapping):
        raise ConfigError(f"recursive_merge_config_dicts needs two dicts; got {type(config).__name__} and "
                          f"{type(default_config).__name__}")
    for key, default in default_config.items():
        if key not in config:
            config[key] = copy.deepcopy(default)
        elif isinstance(default, Mapping) and isinstance(config[key], dict):
            recursive_merge_config_dicts(config[key], default)
    return config
