"""2.7.1 compatibility path: the package of the PyCUDA managers (``pycuda_data_manager``,
``pycuda_function_manager``); the implementations live in :mod:`warp_drive.managers`."""
