"""2.7.1 compatibility path: device checks, from :mod:`warp_drive.compat271.cuda_helpers`."""

from warp_drive.compat271.cuda_helpers import DeviceArchitectures, calculate_blocks_per_env, validate_device_setup

__all__ = ["DeviceArchitectures", "calculate_blocks_per_env", "validate_device_setup"]
