"""The Numba service layer, at 2.7.1's path ``warp_drive.numba_includes``.

``core/`` holds Numba versions of 2.7.1's service kernels (random draws, categorical and OU sampling,
resets, reset pools, logging) under 2.7.1's names and argument orders, for code that launches them
itself (``fm.get_function("reset_when_done_2d")[grid, block](...)``); ``test_build`` gathers them
(2.7.1's unit tests load it). ``env_config`` and ``env_runner`` are generated in memory by
:mod:`warp_drive.numba_backend.modules` (never written here). warp_drive's own services (Sampler,
EnvironmentReset, LogController) run the CUDA C service kernels on the same store. Importing this
package imports nothing of numba; its ``core`` modules do.
"""
