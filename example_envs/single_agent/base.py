"""2.7.1 compatibility path: the single-agent env base class and its helpers.

The implementation is :mod:`example_envs.classic_control.base`.
"""

from example_envs.classic_control.base import SingleAgentEnv, get_action_for_single_agent, map_to_single_agent

__all__ = ["SingleAgentEnv", "get_action_for_single_agent", "map_to_single_agent"]
