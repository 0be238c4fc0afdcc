"""Small validators shared by the config schema and loader, and the package's one did-you-mean helper
(:func:`closest_match`); below the env vocabulary, which uses it too (former path: ``warp_drive.config._checks``).

Every function raises :class:`~warp_drive.errors.ConfigError` whose message names the dotted key,
the value seen, the value expected and the fix.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from warp_drive.errors import ConfigError
from warp_drive.utils.excerpt import brief, excerpt

Schedule = tuple[tuple[float, float], ...]
#: Largest integer a config value may hold (counts, sizes and seeds are int32 on the device).
MAX_INT = 2**31 - 1
#: Most epochs and minibatches of one policy's update, and gradient steps (their product) per iteration.
MAX_NUM_EPOCHS = 1000
MAX_NUM_MINIBATCHES = 1024
MAX_GRADIENT_STEPS = 10_000
#: Largest absolute integer in the free sections (``env``, ``model.kwargs``): numpy's and torch's int64.
MAX_FREE_INT = 2**63 - 1
#: Longest path and longest file or folder name in it (bytes; Linux's PATH_MAX and NAME_MAX).
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
#: Largest value of a schedule (learning rate, loss coefficients).
MAX_SCHEDULE_VALUE = 1e6


def closest_match(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """Returns the closest of ``choices`` to ``word`` (difflib ratio >= ``cutoff``), or None.

    The one did-you-mean helper of the package: every "unknown name" error uses it.
    """
    matches = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=cutoff)
    return matches[0] if matches else None


def join_key(prefix: str, key: str) -> str:
    """Joins a dotted prefix and a key (``"trainer"``, ``"num_envs"`` -> ``trainer.num_envs``)."""
    return f"{prefix}.{key}" if prefix else str(key)


def reject_unknown_keys(section: Mapping[str, Any], known: Iterable[str], prefix: str) -> None:
    """Raises ConfigError for the first key of ``section`` not in ``known``.

    Args:
        prefix: Dotted path of ``section`` (``""`` for the top level).
    """
    known = list(known)
    for key in section:
        if key not in known:
            match = closest_match(key, known)
            hint = f"did you mean `{join_key(prefix, match)}`?" if match else "no close match."
            raise ConfigError(
                f"unknown key `{excerpt(join_key(prefix, key if isinstance(key, str) else brief(key)), 80)}`; {hint} "
                f"Known keys{' of `' + prefix + '`' if prefix else ''}: {', '.join(sorted(known))}."
            )


def require_mapping(value: Any, key: str) -> Mapping[str, Any]:
    """Returns ``value`` if it is a mapping (None counts as empty), else raises ConfigError."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"`{key}`={brief(value)} must be a mapping of keys to values; "
            f"got {type(value).__name__}. Write it as a YAML block (`{key}:` then indented keys)."
        )
    return value


def as_bool(value: Any, key: str) -> bool:
    """Checks a boolean (YAML true/false)."""
    if not isinstance(value, bool):
        raise ConfigError(f"`{key}`={brief(value)} must be a boolean; set `{key}` to true or false.")
    return value


def as_int(value: Any, key: str, *, minimum: int | None = None, maximum: int = MAX_INT) -> int:
    """Checks an integer (bools are refused), an optional lower bound and an upper one."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"`{key}`={brief(value)} must be an integer; set `{key}` to a whole number."
        )
    if minimum is not None and value < minimum:
        raise ConfigError(f"`{key}`={brief(value)} is too small; expected `{key}` >= {minimum}.")
    if value > maximum:
        raise ConfigError(f"`{key}`={brief(value)} is too large; expected `{key}` <= {maximum}.")
    return int(value)


def as_float(value: Any, key: str) -> float:
    """Checks a finite real number (ints are converted; bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(
            f"`{key}`={brief(value)} must be a number; set `{key}` to e.g. 0.5 "
            "(YAML reads `1e-3` as a number only through warp_drive's loader)."
        )
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"`{key}`={value} must be finite; set `{key}` to a finite number.")
    return value


def as_str(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"`{key}`={brief(value)} must be a string; quote it in the YAML file.")
    return value


def as_choice(value: Any, key: str, allowed: Sequence[str]) -> str:
    """``value``, a string among ``allowed``; a :class:`ConfigError` naming it, the allowed values and the closest."""
    text = as_str(value, key)
    if text in allowed:
        return text
    match = closest_match(text, allowed)
    hint = f"; did you mean `{key}: {match}`?" if match else ""
    raise ConfigError(f"`{key}`={brief(value)} is unknown; expected one of {', '.join(allowed)}{hint}")


def as_path(value: Any, key: str) -> str:
    """Checks a file or folder path: a string without NUL bytes that the file system can hold (valid
    text, at most :data:`MAX_PATH_BYTES` bytes, each name in it at most :data:`MAX_NAME_BYTES`)."""
    text = as_str(value, key)
    if "\x00" in text:
        raise ConfigError(f"`{key}`={brief(text)} holds a NUL byte, which no path can; remove it.")
    try:
        data = os.fsencode(text)
    except UnicodeError:
        raise ConfigError(f"`{key}`={brief(text)} is not valid text for a file name (a lone surrogate?); "
                          "write it with ordinary characters.") from None
    if len(data) > MAX_PATH_BYTES:
        raise ConfigError(f"`{key}`={brief(text)} is {len(data):,} bytes long; a path may be at most "
                          f"{MAX_PATH_BYTES} bytes: shorten it.")
    longest = max(data.split(b"/"), key=len)
    if len(longest) > MAX_NAME_BYTES:
        raise ConfigError(f"`{key}` holds a name of {len(longest):,} bytes ({brief(os.fsdecode(longest))}); a file "
                          f"or folder name may be at most {MAX_NAME_BYTES} bytes: shorten it.")
    return text


def as_relative_path(value: Any, key: str) -> str:
    """Checks a path that must stay inside the folder it is joined to (:func:`as_path`, not absolute,
    no ``..``): ``saving.name`` and ``saving.tag`` under ``saving.basedir``."""
    text = as_path(value, key)
    if text.startswith(("/", "~")) or ".." in text.split("/"):
        raise ConfigError(f"`{key}`={brief(text)} would put the run outside `saving.basedir`; use a plain name "
                          "(no leading / or ~, no `..`), and set `saving.basedir` for another place.")
    return text


def as_update_steps(epochs: Any, minibatches: Any, prefix: str) -> tuple[int, int]:
    """Checks ``num_epochs`` and ``num_minibatches`` of a policy section and bounds the gradient steps
    per iteration (their product) that they make; returns ``(num_epochs, num_minibatches)``."""
    epochs = as_int(epochs, join_key(prefix, "num_epochs"), minimum=1, maximum=MAX_NUM_EPOCHS)
    minibatches = as_int(minibatches, join_key(prefix, "num_minibatches"), minimum=1, maximum=MAX_NUM_MINIBATCHES)
    if epochs * minibatches > MAX_GRADIENT_STEPS:
        raise ConfigError(f"`{prefix}`: num_epochs={epochs} x num_minibatches={minibatches} = {epochs * minibatches:,} "
                          f"gradient steps per iteration; the most is {MAX_GRADIENT_STEPS:,} (PPO usually makes 4-10 "
                          "epochs of 4-64 minibatches): lower one of them.")
    return epochs, minibatches


def check_free_section(value: Any, key: str) -> None:
    """A free section (``env``, ``model.kwargs``) holds only string keys (they become keyword
    arguments) and, at any depth, no integer beyond int64 (no env or model can hold one)."""
    stack = [(value, key)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, Mapping):
            for k, v in node.items():
                if not isinstance(k, str) and where == key:
                    raise ConfigError(f"`{key}` key {brief(k)} is not a string ({type(k).__name__}); keys of `{key}` are argument "
                                      f"names: quote it, or write the name it stands for.")
                stack.append((v, join_key(where, k if isinstance(k, str) else brief(k))))
        elif isinstance(node, (list, tuple)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_FREE_INT:
            raise ConfigError(f"`{excerpt(where, 80)}`={brief(node)} is too large; integers here must fit in 64 bits "
                              f"(|value| <= {MAX_FREE_INT}).")


def as_unit_interval(value: Any, key: str, hint: str, *, include_zero: bool = False) -> float:
    """Checks a number in (0, 1] (``include_zero``: [0, 1]); ``hint`` (e.g. a usual value) ends the message."""
    number = as_float(value, key)
    if not (0.0 <= number if include_zero else 0.0 < number) or number > 1.0:
        name = key.rpartition(".")[2]
        raise ConfigError(f"`{key}`={number} is out of range; expected {'0 <=' if include_zero else '0 <'} {name} <= 1 {hint}.")
    return number


def as_positive(value: Any, key: str) -> float:
    value = as_float(value, key)
    if value <= 0:
        raise ConfigError(f"`{key}`={value} must be > 0; set `{key}` to a positive number.")
    return value


def as_schedule(value: Any, key: str, *, positive_number: bool) -> float | Schedule:
    """Checks a number or a piecewise-linear schedule ``[[t0, v0], [t1, v1], ...]``.

    Args:
        positive_number: If True a plain number must be > 0, else >= 0. Schedule values must be
            >= 0 either way.

    Returns:
        A float, or a tuple of ``(timestep, value)`` float pairs.
    """
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError(
                f"`{key}`=[] is an empty schedule; give a number or [[timestep, value], ...]."
            )
        pairs: list[tuple[float, float]] = []
        for i, pair in enumerate(value):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ConfigError(
                    f"`{key}`[{i}]={brief(pair)} must be a [timestep, value] pair; write the schedule "
                    f"as [[0, 0.5], [1000000, 0.05]]."
                )
            t = as_float(pair[0], f"{key}[{i}][0]")
            v = as_float(pair[1], f"{key}[{i}][1]")
            if t < 0:
                raise ConfigError(f"`{key}`[{i}] has timestep {t} < 0; timesteps must be >= 0.")
            if not 0 <= v <= MAX_SCHEDULE_VALUE:
                raise ConfigError(f"`{key}`[{i}] has value {v:g}; schedule values must be >= 0 and <= {MAX_SCHEDULE_VALUE:g}.")
            if pairs and t < pairs[-1][0]:
                raise ConfigError(
                    f"`{key}` timesteps are not sorted ({pairs[-1][0]} then {t}); "
                    "order the [timestep, value] pairs by increasing timestep."
                )
            pairs.append((t, v))
        return tuple(pairs)
    number = as_positive(value, key) if positive_number else as_float(value, key)
    if number > MAX_SCHEDULE_VALUE:
        raise ConfigError(f"`{key}`={number:g} is too large; expected `{key}` <= {MAX_SCHEDULE_VALUE:g}.")
    if number < 0:
        raise ConfigError(f"`{key}`={number} must be >= 0; set `{key}` to a non-negative number.")
    return number


def as_schedules(value: Any, key: str, roles: Sequence[str], required: Sequence[str], example: str) -> dict[str, Any]:
    """A positive schedule per role (learning rates of several optimizers): one number or schedule for
    every role, or ``{role: schedule}`` with the ``required`` roles; an optional role left out is absent."""
    if not isinstance(value, Mapping):
        return dict.fromkeys(roles, as_schedule(value, key, positive_number=True))
    reject_unknown_keys(value, roles, key)
    missing = [r for r in required if r not in value]
    if missing:
        raise ConfigError(f"`{key}` lacks `{missing[0]}`; write `{key}: {example}` or one number for all.")
    return {r: as_schedule(value[r], f"{key}.{r}", positive_number=True) for r in roles if r in value}


def schedule_to_plain(value: float | Schedule) -> float | list[list[float]]:
    """Converts a checked schedule back to YAML-friendly lists."""
    if isinstance(value, tuple):
        return [[t, v] for t, v in value]
    return value


def merged_section(section: Any, defaults: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """Checks ``section`` is a mapping without unknown keys; returns defaults updated by it."""
    section = require_mapping(section, prefix)
    reject_unknown_keys(section, defaults.keys(), prefix)
    out = copy.deepcopy(dict(defaults))
    out.update(copy.deepcopy(dict(section)))
    return out


def reject_null_sections(raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """(First, :func:`reject_unknown_keys` on ``raw``'s top-level keys.) A section given as null
    (``trainer: null``, or ``trainer:`` with nothing under it) is an error, not an empty section: no
    2.7.1 config writes one, and it usually means lost indentation.
    Sections are the keys whose defaults are mappings, at any depth (each ``policy.<tag>`` too)."""

    def fail(path: str) -> None:
        key = path.rpartition(".")[2]
        raise ConfigError(f"`{path}` is null (`{key}: null`, or `{key}:` with nothing indented under it); "
                          + ("give it a policy tag, e.g. `policy: {shared: {to_train: true}}`." if path == "policy"
                             else f"write `{key}: {{}}` or remove the line."))

    def walk(node: Any, template: Mapping[str, Any], prefix: str) -> None:
        if not isinstance(node, Mapping):
            return
        for key, value in node.items():
            sub = template.get(key) if isinstance(key, str) else None
            if not isinstance(sub, Mapping):
                continue
            path = join_key(prefix, key)
            if value is None:
                fail(path)
            if path == "policy" and isinstance(value, Mapping):
                for tag, section in value.items():
                    if section is None:
                        fail(f"policy.{tag}")
                    walk(section, sub, f"policy.{tag}")
            else:
                walk(value, sub, path)

    reject_unknown_keys(raw, defaults.keys(), "")
    walk(raw, defaults, "")


class PlainDict:
    """Mixin of the config dataclasses: :meth:`to_dict`."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (accepted by ``from_dict``; schedules become lists of pairs)."""
        return to_plain(self)


def to_plain(value: Any) -> Any:
    """Dataclass -> dict, tuples -> lists, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value
