"""NumPy twins of the CUDA core service layer (``warp_drive/cuda/core/*.cuh``) for the CPU backend.

One module per header:

- :mod:`~warp_drive.managers.cpu_core.sampler`: ``sampler.cuh`` (categorical and Gaussian actions);
- :mod:`~warp_drive.managers.cpu_core.reset`: ``reset.cuh`` (reset when done, start-state hook);
- :mod:`~warp_drive.managers.cpu_core.log`: ``log.cuh`` (episode logs);

on :mod:`~warp_drive.managers.cpu_core.words` (kernel arguments as flat word arrays);
:mod:`warp_drive.managers.cpu_kernels` gathers them into the CPU backend's kernel table.
"""
