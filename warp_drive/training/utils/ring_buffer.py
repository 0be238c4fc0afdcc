"""2.7.1 compatibility path: RingBuffer, RingBufferManager (warp_drive.compat271.ring_buffer)."""

from warp_drive.compat271.ring_buffer import RingBuffer, RingBufferManager

__all__ = ["RingBuffer", "RingBufferManager"]
