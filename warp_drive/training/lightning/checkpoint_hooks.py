"""The checkpoint hooks of :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase`: the engine's part of a
checkpoint (:mod:`~warp_drive.training.lightning.engine_state`), and loading a checkpoint outside ``Trainer.fit``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.checkpoint_files import safe_load
from warp_drive.training.engine import Engine
from warp_drive.training.lightning.engine_state import (
    CHECKPOINT_KEY,
    engine_state,
    resolve_engine_state,
    restore_engine_state,
)
from warp_drive.training.lightning.policies import load_optimizer_states

logger = logging.getLogger("warp_drive.training.lightning.module")

#: torch's switch that makes ``torch.load`` unpickle any object (and so run code) where the caller passes no ``weights_only``.
FORCE_UNSAFE_LOAD_VARIABLE = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"


def unsafe_loads_forced() -> bool:
    """Whether :data:`FORCE_UNSAFE_LOAD_VARIABLE` is set to a true value (torch's own reading of it)."""
    return os.environ.get(FORCE_UNSAFE_LOAD_VARIABLE, "0").strip().lower() in ("1", "y", "yes", "true")


def guard_checkpoint_loads(strategy: Any) -> None:
    """With ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` set, ``Trainer.fit(ckpt_path=...)`` without ``weights_only``
    would unpickle whatever the file holds: warn, and make this trainer's checkpoint loads weights-only
    (:func:`~warp_drive.training.checkpoint_files.safe_load`: a file holding other objects is refused
    before any of it is unpickled) unless the caller passes ``weights_only=False`` itself. Called in
    ``setup``, before Lightning restores a checkpoint."""
    if not unsafe_loads_forced():
        return
    io = strategy.checkpoint_io
    load = io.load_checkpoint
    if getattr(load, "weights_only_guard", False):
        return
    logger.warning("%s is set: torch.load unpickles any object, and runs its code, where weights_only is not passed; "
                   "this module's checkpoint loads stay weights-only (Trainer.fit(ckpt_path=...) included). Unset it, "
                   "and load only checkpoints you trust.", FORCE_UNSAFE_LOAD_VARIABLE)

    def weights_only_load(path: Any, map_location: Any = None, weights_only: bool | None = None) -> Any:
        if weights_only is None or weights_only:
            return safe_load(path, map_location, "Lightning checkpoint")
        return load(path, map_location=map_location, weights_only=weights_only)

    weights_only_load.weights_only_guard = True  # type: ignore[attr-defined]
    io.load_checkpoint = weights_only_load


class CheckpointHooks:
    """``on_save_checkpoint``, ``on_load_checkpoint``, ``engine_state`` and ``restore_checkpoint``.

    A mixin of :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase`, which provides the names declared
    below (``_pending_state``: a checkpoint's state loaded before the engine exists).
    """

    engine: Engine | None
    _pending_state: dict[str, Any] | None
    _optimizer_keys: list[tuple[str, str]]

    if TYPE_CHECKING:  # pragma: no cover - defined by WarpDriveModuleBase and LightningModule
        global_rank: int
        _trainer: Any
        trainer: Any

        def ensure_engine(self, rank: int = 0, world_size: int = 1, device_id: int | None = None) -> Engine: ...
        def _require_engine(self, needed_by: str) -> Engine: ...
        def _distributed(self) -> bool: ...
        def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> Any: ...

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the engine's part: counters, random streams, each policy's state (every rank's under
        DDP); the tensors Lightning saves in ``checkpoint`` already are stored as references."""
        if self.engine is not None:
            checkpoint[CHECKPOINT_KEY] = engine_state(self.engine, self.global_rank, self._distributed(), checkpoint)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the engine's part (deferred until the engine exists)."""
        state = checkpoint.get(CHECKPOINT_KEY)
        if state is None:
            logger.warning("the checkpoint has no '%s' entry: engine counters start from zero", CHECKPOINT_KEY)
            return
        state = resolve_engine_state(state, checkpoint)
        if self.engine is None:
            self._pending_state = state
        else:
            self._restore_engine_state(state)

    def engine_state(self) -> dict[str, Any]:
        """The engine's checkpoint entry, every tensor by value (collective under DDP: call on every rank)."""
        return engine_state(self._require_engine("engine_state()"), self.global_rank, self._distributed())

    def _restore_engine_state(self, state: Mapping[str, Any]) -> None:
        engine = self._require_engine("restoring a checkpoint")
        on_trainer = self._trainer is not None
        restore_engine_state(engine, state, self.global_rank if on_trainer else 0,
                             self.trainer.world_size if on_trainer else 1)

    def restore_checkpoint(self, path: str | Path) -> None:
        """Load a Lightning checkpoint of this module outside ``Trainer.fit`` (e.g. to evaluate).

        Restores the weights, the optimizer states and the engine counters; builds the engine
        with the factory (rank 0, one device) if needed.

        Raises:
            ConfigError: The file does not exist or does not match the engine's policies.
        """
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"checkpoint {str(path)!r} does not exist")
        engine = self.ensure_engine()
        ckpt = safe_load(path, map_location=torch.device(engine.device))
        self.load_state_dict(ckpt["state_dict"])
        load_optimizer_states(engine, self._optimizer_keys, ckpt.get("optimizer_states", []))
        self.on_load_checkpoint(ckpt)
