"""2.7.1 compatibility path: ``Constants``, the reserved data names (:mod:`warp_drive.vocab.constants`)."""

from warp_drive.vocab.constants import Constants

__all__ = ["Constants"]
