"""2.7.1 compatibility path: importing it makes the CUDA primary context current for pycuda
(:mod:`warp_drive.compat271.autoinit`; a no-op without pycuda or a device). Importing ``warp_drive``
never does this: no module of the package imports this one."""

from warp_drive.compat271.autoinit import context, device

__all__ = ["context", "device"]
