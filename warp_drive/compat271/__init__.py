"""The compat room: the implementation code that exists only for WarpDrive 2.7.1.

Code written for 2.7.1 reaches it through 2.7.1's import paths (the thin re-exports listed in
:data:`warp_drive.compat.COMPAT_MODULES`); the rest of ``warp_drive`` does not depend on it, but
for the few core modules ``tests/cpu/test_import_structure.py`` allows (``COMPAT_ROOM_IMPORTERS``).
Nothing is imported here: each module stands on the floor of the layer table
(``docs/architecture.md``) that its own imports need.

- :mod:`~warp_drive.compat271.cuda_helpers`: 2.7.1's build helpers, template arguments and device checks;
- :mod:`~warp_drive.compat271.autoinit`: 2.7.1's ``autoinit_pycuda`` (an import-time effect);
- :mod:`~warp_drive.compat271.kernels`: 2.7.1's kernel names, and when ``compat_271.cuh`` is compiled in;
- :mod:`~warp_drive.compat271.main_files`: 2.7.1's ``_compile`` of self-contained ``.cu`` files;
- :mod:`~warp_drive.compat271.env_barrier`: launch geometry of kernels that call 2.7.1's env barrier;
- :mod:`~warp_drive.compat271.cpu_kernels`: the NumPy twins of 2.7.1's kernels (the CPU backend);
- :mod:`~warp_drive.compat271.data_loader`: 2.7.1's training placeholders (``create_and_push_data_placeholders``);
- :mod:`~warp_drive.compat271.reference_format`: 2.7.1's parameter names of policy weight files.

The CUDA side, ``compat_271.cuh``, stays with the other core headers in ``warp_drive/cuda/core``
(one include directory; the cache key covers it).
"""
