"""2.7.1 compatibility path: the package of the Numba managers (``numba_data_manager``,
``numba_function_manager``); the implementations live in :mod:`warp_drive.managers`."""
