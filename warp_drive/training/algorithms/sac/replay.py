"""A replay buffer on the device: a ring of transitions ``(s, a, r, s', not_done)``, no host sync.

Pushes and draws are whole tensors (one scatter per field, one ``randint`` per draw); the write
position and the fill level are Python integers that change by known amounts (a push of ``n``
rows), so nothing is read back from the device.

Shapes (``C`` = capacity): obs, next_obs ``(C, *obs)``; actions ``(C, d)`` (the unit box);
rewards, not_done ``(C,)`` float32 (``not_done`` = 0 after a termination: no bootstrap).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from warp_drive.errors import ConfigError, DataShapeError

Tensor = torch.Tensor
FIELDS = ("obs", "actions", "rewards", "next_obs", "not_done")


class ReplayBuffer:
    """A ring buffer of ``capacity`` transitions (see the module docstring).

    Args:
        capacity: transitions kept; the oldest are overwritten once full.
        obs_shape: feature shape of one observation; action_dim: d.
        device: where the rows live; obs_dtype: the observations' dtype.
    """

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], action_dim: int, device: torch.device | str,
                 obs_dtype: torch.dtype = torch.float32) -> None:
        if int(capacity) < 1:
            raise ConfigError(f"replay capacity {capacity} must be >= 1 (policy.<tag>.buffer_size)")
        self.capacity = int(capacity)
        C = self.capacity
        zeros = lambda *shape, dtype=torch.float32: torch.zeros(shape, dtype=dtype, device=device)  # noqa: E731
        self.data: dict[str, Tensor] = {
            "obs": zeros(C, *obs_shape, dtype=obs_dtype), "actions": zeros(C, int(action_dim)), "rewards": zeros(C),
            "next_obs": zeros(C, *obs_shape, dtype=obs_dtype), "not_done": zeros(C)}
        #: next row to write; rows filled so far (<= capacity); transitions pushed in total
        self.position = 0
        self.size = 0
        self.pushed = 0

    @property
    def device(self) -> torch.device:
        return self.data["rewards"].device

    def __len__(self) -> int:
        return self.size

    def push(self, batch: Mapping[str, Tensor]) -> None:
        """Appends ``n`` transitions: ``batch[f]`` has ``n`` rows of field ``f`` (every :data:`FIELDS`).

        With ``n`` above the capacity only the last ``capacity`` rows are kept.

        Raises:
            DataShapeError: a field is missing or its rows do not match the buffer's.
        """
        n = self._rows(batch)
        if n == 0:
            return
        skip = max(0, n - self.capacity)
        kept = n - skip
        index = (self.position + torch.arange(kept, device=self.device)) % self.capacity
        for name, store in self.data.items():
            store.index_copy_(0, index, batch[name][skip:].to(store.dtype).reshape(kept, *store.shape[1:]))
        self.position = (self.position + kept) % self.capacity
        self.size = min(self.capacity, self.size + kept)
        self.pushed += n

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> dict[str, Tensor]:
        """``batch_size`` rows drawn uniformly, with replacement, from the filled ones.

        Returns:
            ``{field: (batch_size, ...)}`` (gathered copies).

        Raises:
            ConfigError: the buffer is empty.
        """
        if self.size == 0:
            raise ConfigError("the replay buffer is empty: collect transitions before sampling")
        index = torch.randint(0, self.size, (int(batch_size),), device=self.device, generator=generator)
        return {name: store.index_select(0, index) for name, store in self.data.items()}

    def _rows(self, batch: Mapping[str, Tensor]) -> int:
        missing = [f for f in FIELDS if f not in batch]
        if missing:
            raise DataShapeError(f"a replay push needs the fields {FIELDS}; missing {missing}")
        n = int(batch["rewards"].shape[0])
        for name, store in self.data.items():
            got = tuple(batch[name].shape)
            if got[0] != n or got[1:] != tuple(store.shape[1:]):
                raise DataShapeError(f"replay field {name!r}: got rows {got}, expected ({n}, *{tuple(store.shape[1:])})")
        return n

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The filled rows (in storage order) and the counters; an empty buffer saves no rows."""
        return {"capacity": self.capacity, "position": self.position, "size": self.size, "pushed": self.pushed,
                "data": {name: store[: self.size].clone() for name, store in self.data.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores :meth:`state_dict` output (same capacity and row shapes).

        Raises:
            ConfigError: another capacity; DataShapeError: rows of another shape.
        """
        if int(state["capacity"]) != self.capacity:
            raise ConfigError(f"the saved replay holds {state['capacity']} transitions, this one {self.capacity} "
                              "(policy.<tag>.buffer_size must match the checkpoint's)")
        size = int(state["size"])
        for name, store in self.data.items():
            rows = state["data"][name]
            if tuple(rows.shape) != (size, *store.shape[1:]):
                raise DataShapeError(f"saved replay field {name!r} has shape {tuple(rows.shape)}, expected "
                                     f"({size}, *{tuple(store.shape[1:])})")
            store[:size].copy_(rows.to(store.device))
        self.position, self.size, self.pushed = int(state["position"]), size, int(state["pushed"])
