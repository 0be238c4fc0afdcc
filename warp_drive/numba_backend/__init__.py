"""The Numba backend's machinery: env steps written in Python and compiled by numba-cuda.

- :mod:`~warp_drive.numba_backend.runtime`: numba imported lazily, the CUDA simulator told apart
  from a GPU, and :class:`~warp_drive.numba_backend.runtime.NumbaKernel`, which launches a Numba
  kernel on the data store's torch tensors and on torch's current stream;
- :mod:`~warp_drive.numba_backend.modules`: the launch-constant module ``env_config`` and the
  ``env_runner`` module of WarpDrive 2.7.1, generated in memory (never written into the package).

A floor up, since it builds envs through the wrapper, :mod:`warp_drive.testing.numba_build` compiles
registered Numba step kernels for a target architecture without a GPU
(``python -m warp_drive.cuda.check_build --numba``).

Importing this package imports nothing of numba; the managers are
:class:`~warp_drive.managers.numba_data_manager.NumbaDataManager` and
:class:`~warp_drive.managers.numba_function_manager.NumbaFunctionManager`.
"""
