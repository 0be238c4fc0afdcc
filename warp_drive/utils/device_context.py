"""2.7.1 compatibility path: ``make_current_context``, from :mod:`warp_drive.compat271.cuda_helpers`."""

from warp_drive.compat271.cuda_helpers import make_current_context

__all__ = ["make_current_context"]
