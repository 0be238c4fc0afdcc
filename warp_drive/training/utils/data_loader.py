"""2.7.1 compatibility path: placeholder creation for training and consistency checks (from
:mod:`warp_drive.compat271.data_loader`; ``get_obs``: :mod:`warp_drive.env.placeholders`)."""

from warp_drive.compat271.data_loader import create_and_push_data_placeholders, get_flattened_obs_size
from warp_drive.env.placeholders import get_obs

__all__ = ["create_and_push_data_placeholders", "get_flattened_obs_size", "get_obs"]
