"""NumPy twins of the CUDA core service layer (``warp_drive/cuda/core/*.cuh``) for the CPU backend.

One module per header:

- :mod:`~warp_drive.managers.cpu_core.sampler`: ``sampler.cuh`` (categorical and Gaussian actions);
- :mod:`~warp_drive.managers.cpu_core.reset`: ``reset.cuh`` (reset when done, start-state hook);
- :mod:`~warp_drive.managers.cpu_core.log`: ``log.cuh`` (episode logs);

on :mod:`~warp_drive.managers.cpu_core.words`, which views kernel arguments as the flat word
arrays a kernel's pointers are. :mod:`warp_drive.managers.cpu_kernels` (the twin of
``core_service.cuh``) gathers them, with the twins of WarpDrive 2.7.1's kernels
(:mod:`warp_drive.compat271.cpu_kernels`), into the kernel table the CPU function manager
launches from.
"""
