"""DDPG: deterministic actor, Q critic, target networks, Ornstein-Uhlenbeck exploration, n-step targets.

Registered as ``algorithm: DDPG`` (:mod:`warp_drive.config.algorithms`); section parser
:class:`warp_drive.config.ddpg.DDPGPolicyConfig`.
"""

from warp_drive.training.algorithms.ddpg.parts import (
    DDPGNets,
    OUNoise,
    bootstrap_targets,
    ddpg_update,
    hard_update,
    nstep_returns,
    soft_update,
)
from warp_drive.training.algorithms.ddpg.policy import DDPGPolicy, NStepTargets, build_policy

__all__ = ["DDPGNets", "DDPGPolicy", "NStepTargets", "OUNoise", "bootstrap_targets", "build_policy", "ddpg_update",
           "hard_update", "nstep_returns", "soft_update"]
