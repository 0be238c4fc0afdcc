"""Former path: ``warp_drive.config.ddpg``.

DDPG's settings live in its folder: :mod:`warp_drive.training.algorithms.ddpg.config`
(``DDPGPolicyConfig``, ``DDPGModelConfig``, the OU-noise ``sampler.params``).
"""

from warp_drive.training.algorithms.ddpg.config import (
    ACTOR_DEFAULTS,
    CRITIC_DEFAULTS,
    DDPG_POLICY_DEFAULTS,
    OU_DEFAULTS,
    OU_NOISE_PARAMS,
    DDPGModelConfig,
    DDPGPolicyConfig,
    parse_ou_params,
)

__all__ = ["ACTOR_DEFAULTS", "CRITIC_DEFAULTS", "DDPG_POLICY_DEFAULTS", "OU_DEFAULTS", "OU_NOISE_PARAMS",
           "DDPGModelConfig", "DDPGPolicyConfig", "parse_ou_params"]
