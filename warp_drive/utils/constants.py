"""2.7.1 compatibility path: ``Constants``, the reserved data names (:mod:`warp_drive.env.constants`)."""

from warp_drive.env.constants import Constants

__all__ = ["Constants"]
