"""2.7.1 compatibility path: the package of ``warp_drive.utils.numba_utils.misc``."""
