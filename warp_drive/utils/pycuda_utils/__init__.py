"""2.7.1 compatibility path: the package of ``warp_drive.utils.pycuda_utils.misc``."""
