"""2.7.1 compatibility path: ``example_envs.tag_continuous.generate_rollout_animation``.

``generate_tag_env_rollout_animation(trainer, fps=50, ...)`` from
:mod:`example_envs.tag_continuous.rendering` (a Trainer or a Lightning WarpDriveModule; returns a
matplotlib animation).
"""

from example_envs.tag_continuous.rendering import generate_tag_env_rollout_animation

__all__ = ["generate_tag_env_rollout_animation"]
