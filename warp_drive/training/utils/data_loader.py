"""2.7.1 compatibility path: placeholder creation for training and consistency checks.

The implementation is :mod:`warp_drive.utils.placeholders`.
"""

from warp_drive.utils.placeholders import (
    create_and_push_data_placeholders,
    get_flattened_obs_size,
    get_obs,
)

__all__ = ["create_and_push_data_placeholders", "get_flattened_obs_size", "get_obs"]
