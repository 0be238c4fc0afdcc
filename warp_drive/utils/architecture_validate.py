"""2.7.1 compatibility path: device checks, from :mod:`warp_drive.cuda.legacy`."""

from warp_drive.cuda.legacy import DeviceArchitectures, calculate_blocks_per_env, validate_device_setup

__all__ = ["DeviceArchitectures", "calculate_blocks_per_env", "validate_device_setup"]
