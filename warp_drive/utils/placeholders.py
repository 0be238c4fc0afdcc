"""Former path: ``warp_drive.utils.placeholders``, the step placeholders and 2.7.1's training
placeholders (moved to :mod:`warp_drive.env.placeholders` and
:mod:`warp_drive.compat271.data_loader`; this path re-exports them)."""

from warp_drive.compat271.data_loader import (
    create_and_push_data_placeholders,
    get_flattened_obs_size,
    validate_policy_tag_to_agent_id_map,
)
from warp_drive.env.placeholders import AGENT_AXES, action_layout, get_obs, placeholder_feed, stack_agent_obs

__all__ = [
    "AGENT_AXES",
    "action_layout",
    "create_and_push_data_placeholders",
    "get_flattened_obs_size",
    "get_obs",
    "placeholder_feed",
    "stack_agent_obs",
    "validate_policy_tag_to_agent_id_map",
]
