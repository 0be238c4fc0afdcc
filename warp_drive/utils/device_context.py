"""2.7.1 compatibility path: ``make_current_context``, from :mod:`warp_drive.cuda.legacy`."""

from warp_drive.cuda.legacy import make_current_context

__all__ = ["make_current_context"]
