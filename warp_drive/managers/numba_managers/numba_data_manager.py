"""2.7.1 compatibility path: :class:`~warp_drive.managers.numba_data_manager.NumbaDataManager`."""

from warp_drive.managers.numba_data_manager import NumbaDataManager

__all__ = ["NumbaDataManager"]
