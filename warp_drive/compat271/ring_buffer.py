"""2.7.1's RingBuffer: a circular queue over the leading axis of a torch-accessible store array.

Only 2.7.1's Numba unit tests use it (its trainers never did). ``enqueue`` writes one row and drops
the oldest when full; ``unroll`` returns the rows oldest first (a view while they do not wrap).
"""

from __future__ import annotations

from typing import Any

import torch

from warp_drive.errors import ConfigError, DataNotFoundError, DataTypeError

__all__ = ["RingBuffer", "RingBufferManager"]


class RingBuffer:
    """``size`` rows (default: all) of the store array ``name``, used as a ring.

    Raises:
        ConfigError: ``name`` is not torch accessible, or ``size`` exceeds its leading dimension.
    """

    def __init__(self, name: str | None = None, size: int | None = None, data_manager: Any = None) -> None:
        if data_manager is None or not data_manager.is_data_on_device_via_torch(name):
            raise ConfigError(f"RingBuffer '{name}': push it with torch_accessible=True to a data manager first")
        capacity = data_manager.get_shape(name)[0]
        self.size = capacity if size is None else int(size)
        if not 0 < self.size <= capacity:
            raise ConfigError(f"RingBuffer '{name}': size {size} must be in 1 .. {capacity} (the array's leading axis)")
        self.buffer_name = f"RingBuffer_{name}"
        self.queue = data_manager.data_on_device_via_torch(name)
        self.front = 0  # oldest row
        self.current_size = 0

    def enqueue(self, data: torch.Tensor) -> None:
        """Write ``data`` as the newest row (dropping the oldest when full)."""
        if not isinstance(data, torch.Tensor):
            raise DataTypeError(f"{self.buffer_name}.enqueue takes a torch tensor, got {type(data).__name__}")
        self.queue[(self.front + self.current_size) % self.size] = data
        if self.current_size == self.size:
            self.front = (self.front + 1) % self.size
        else:
            self.current_size += 1

    def unroll(self) -> torch.Tensor | None:
        """The rows oldest to newest (None when empty)."""
        if self.current_size == 0:
            return None
        end = self.front + self.current_size
        if end <= self.size:
            return self.queue[self.front:end]
        order = torch.arange(self.front, end, device=self.queue.device) % self.size
        return self.queue[order]

    def isfull(self) -> bool:
        return self.current_size == self.size


class RingBufferManager(dict):
    """Ring buffers by array name."""

    def add(self, name: str, size: int | None = None, data_manager: Any = None) -> None:
        self[name] = RingBuffer(name=name, size=size, data_manager=data_manager)

    def get(self, name: str) -> RingBuffer:  # type: ignore[override]
        if name not in self:
            raise DataNotFoundError(f"no ring buffer '{name}'; have: {', '.join(self) or 'none'}")
        return self[name]

    def has(self, name: str) -> bool:
        return name in self
