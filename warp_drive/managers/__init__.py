"""Data and function managers (pycuda, Numba and cpu backends) and the NumPy twins of the core kernels; the
services built on them are in :mod:`warp_drive.services`."""
