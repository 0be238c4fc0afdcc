"""DataFeed: the named arrays an env hands to the data manager."""

from __future__ import annotations

from typing import Any, Iterable

from warp_drive.errors import ConfigError, DataShapeError, DuplicateDataError

#: Attributes beyond the two flags that the data manager reads (set by ``add_pool_for_reset``).
_EXTRA_ATTRIBUTES = ("is_reset_pool", "reset_target")


class DataFeed(dict):
    """A dict ``name -> {"data": value, "attributes": {...}}``.

    Attributes understood by the data manager:

    - ``save_copy_and_apply_at_reset``: keep a copy; the env's slot is restored from it when the env
      is reset. Arrays pushed through an :class:`~warp_drive.env.env_wrapper.EnvWrapper` with this flag
      get a leading env axis (one copy per replica).
    - ``log_data_across_episode``: record the array of one env every step (see ``LogController``).
    - ``is_reset_pool`` / ``reset_target``: a pool of states, one row drawn per env at each reset.
    """

    def add_data(
        self,
        name: str,
        data: Any,
        save_copy_and_apply_at_reset: bool = False,
        log_data_across_episode: bool = False,
        **kwargs: Any,
    ) -> None:
        """Add one array or scalar under ``name``.

        Raises:
            DuplicateDataError: ``name`` is already in this feed.
            ConfigError: an attribute the data manager does not know (it would be ignored).
        """
        unknown = [k for k in kwargs if k not in _EXTRA_ATTRIBUTES]
        if unknown:
            from warp_drive.utils.checks import closest_match

            match = closest_match(unknown[0], [*_EXTRA_ATTRIBUTES, "save_copy_and_apply_at_reset", "log_data_across_episode"])
            hint = f"did you mean {match!r}? " if match else ""
            raise ConfigError(
                f"'{name}': add_data() got the unknown attribute {unknown[0]}={kwargs[unknown[0]]!r}, which nothing "
                f"reads; {hint}attributes: save_copy_and_apply_at_reset, log_data_across_episode "
                f"(reset pools: add_pool_for_reset)"
            )
        if not isinstance(name, str) or not name:
            raise DataShapeError(f"data name must be a non-empty string, got {name!r}")
        if name in self:
            raise DuplicateDataError(
                f"'{name}' is already in this DataFeed; use another name or remove the first entry"
            )
        attributes = {
            "save_copy_and_apply_at_reset": bool(save_copy_and_apply_at_reset),
            "log_data_across_episode": bool(log_data_across_episode),
            **kwargs,
        }
        self[name] = {"data": data, "attributes": attributes}

    def add_data_list(self, data_list: Iterable[Any]) -> None:
        """Add several entries: tuples ``(name, data[, save_flag[, log_flag]])`` or dicts."""
        for item in data_list:
            if isinstance(item, dict):
                self.add_data(**item)
            elif isinstance(item, (tuple, list)) and 2 <= len(item) <= 4:
                self.add_data(*item)
            else:
                raise DataShapeError(
                    f"add_data_list items are (name, data[, save_flag[, log_flag]]) tuples or "
                    f"dicts with keys name/data; got {item!r}"
                )

    def add_pool_for_reset(self, name: str, data: Any, reset_target: str) -> None:
        """Add a reset pool of shape ``(pool_size, *target_shape_per_env)`` for ``reset_target``."""
        self.add_data(name, data, is_reset_pool=True, reset_target=reset_target)
