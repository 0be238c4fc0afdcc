"""Argfix: accept a renamed keyword argument under its old name, with a DeprecationWarning."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Mapping

from warp_drive.errors import ConfigError


class Argfix:
    """Decorator mapping deprecated keyword names to their current names.

    ``@Argfix({"use_cuda": "env_backend"})`` lets callers still pass ``use_cuda=...``: the value is
    passed on as ``env_backend`` and a :class:`DeprecationWarning` names the new keyword. Passing
    both names at once is an error (the two values could disagree).

    Args:
        arg_mapping: ``{old keyword: new keyword}``.
    """

    def __init__(self, arg_mapping: Mapping[str, str]) -> None:
        self.arg_mapping = dict(arg_mapping)

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        mapping = self.arg_mapping

        @functools.wraps(func)
        def renamed(*args: Any, **kwargs: Any) -> Any:
            for old, new in mapping.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise ConfigError(
                        f"{func.__qualname__}() got both '{old}' (deprecated) and '{new}'; pass only {new}="
                    )
                warnings.warn(
                    f"'{old}' is a deprecated argument of {func.__qualname__}(); use '{new}' instead",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return renamed
