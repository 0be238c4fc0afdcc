"""DDPG: deterministic actor, Q critic, target networks, Ornstein-Uhlenbeck exploration, n-step targets.

Registered as ``algorithm: DDPG`` (:mod:`warp_drive.config.algorithms`); its settings are in this
folder: the section parser :class:`~.config.DDPGPolicyConfig` and the OU-noise ``sampler.params``
(:data:`~.config.OU_NOISE_PARAMS`, :func:`~.config.parse_ou_params`).
"""

from warp_drive.training.algorithms.ddpg.config import (
    OU_DEFAULTS,
    OU_NOISE_PARAMS,
    DDPGModelConfig,
    DDPGPolicyConfig,
    parse_ou_params,
)
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

__all__ = ["OU_DEFAULTS", "OU_NOISE_PARAMS", "DDPGModelConfig", "DDPGNets", "DDPGPolicyConfig", "parse_ou_params", "DDPGPolicy", "NStepTargets", "OUNoise", "bootstrap_targets", "build_policy", "ddpg_update",
           "hard_update", "nstep_returns", "soft_update"]
