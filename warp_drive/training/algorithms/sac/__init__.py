"""Soft actor-critic (SAC): twin Q critics with Polyak targets, a squashed Gaussian actor,
automatic entropy tuning and a replay buffer on the device.

An algorithm folder behind the seam of :mod:`warp_drive.training.algorithms.base`: ``config``
parses the ``policy.<tag>`` section (:class:`SACPolicyConfig`), ``replay`` is the device ring
buffer, ``update`` one gradient step, ``policy`` the :class:`SACPolicy` and its builder
:func:`build_policy` (the registry entry ``SAC`` of :mod:`warp_drive.config.algorithms`).
"""

from warp_drive.training.algorithms.sac.config import SACModelConfig, SACPolicyConfig
from warp_drive.training.algorithms.sac.policy import SACPolicy, build_policy
from warp_drive.training.algorithms.sac.replay import ReplayBuffer
from warp_drive.training.algorithms.sac.update import SACNets, TwinQ, sac_step

__all__ = ["ReplayBuffer", "SACModelConfig", "SACNets", "SACPolicy", "SACPolicyConfig", "TwinQ", "build_policy",
           "sac_step"]
