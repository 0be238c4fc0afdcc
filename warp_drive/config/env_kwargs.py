"""Checking the free ``env`` section of a run config against the env class signature."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from warp_drive.utils import checks as chk
from warp_drive.errors import ConfigError

#: For env classes with ``**kwargs``: a key at least this similar (difflib ratio) to a named
#: parameter is reported as a typo of it (``episode_lenght`` -> ``episode_length``).
VAR_KW_TYPO_CUTOFF = 0.85


def check_env_kwargs(
    env_cls: type,
    env_dict: Mapping[str, Any],
    *,
    supplied_by_caller: Iterable[str] = (),
) -> None:
    """Checks that ``env_cls(**env_dict, **caller_kwargs)`` binds to the class's ``__init__``.

    Args:
        env_cls: The environment class.
        env_dict: The ``env`` section of the run config.
        supplied_by_caller: Names the caller passes itself (e.g. ``"env_backend"``); they may be
            required parameters and must not appear in ``env_dict``.

    Raises:
        ConfigError: For a key that ``__init__`` does not accept (with a did-you-mean hint; for a
            class with ``**kwargs``, a key that is a near miss of a named parameter), a key that
            the caller supplies itself, or a required parameter that is missing.
    """
    try:
        signature = inspect.signature(env_cls.__init__)  # type: ignore[misc]
    except (TypeError, ValueError) as err:  # builtins / C extensions
        raise ConfigError(f"cannot read the signature of {env_cls!r}.__init__: {err}") from err
    params = [p for name, p in signature.parameters.items() if name != "self"]
    has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    named = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    accepted = [p.name for p in named]
    supplied = set(supplied_by_caller)
    cls_name = getattr(env_cls, "__name__", repr(env_cls))
    for key in env_dict:
        if key in supplied:
            raise ConfigError(
                f"`env.{key}` is set by the trainer itself and must not be in the `env` section; "
                f"remove `env.{key}` (set it in the `trainer` section if it exists there)."
            )
        if key in accepted:
            continue
        if not has_var_kw:
            match = chk.closest_match(key, accepted)
            hint = f"did you mean `env.{match}`?" if match else "no close match."
            raise ConfigError(
                f"unknown key `env.{key}` (value {chk.brief(env_dict[key])}): {cls_name}.__init__ takes no "
                f"argument `{key}`; {hint} Accepted: {', '.join(accepted) or '(none)'}."
            )
        # **kwargs takes any name, but a near miss of a named parameter is a typo
        match = chk.closest_match(key, accepted, cutoff=VAR_KW_TYPO_CUTOFF)
        if match:
            raise ConfigError(
                f"unknown key `env.{key}` (value {chk.brief(env_dict[key])}) for {cls_name}: did you mean "
                f"`env.{match}`? (its **kwargs would take `{key}` as an extra argument)"
            )
    missing = [p.name for p in named
               if p.default is inspect.Parameter.empty and p.name not in env_dict and p.name not in supplied]
    if missing:
        raise ConfigError(
            f"`env` section lacks required argument(s) of {cls_name}: "
            f"{', '.join('env.' + m for m in missing)}; add them to the `env` section."
        )
