"""The algorithms: the seam every one stands behind, and the A2C/PPO losses, returns/GAE and update loop.

* The seam (:mod:`.base`): :class:`Policy` (the checked contract), :class:`BuildContext`,
  :class:`UpdateContext`; the registry: :class:`AlgorithmEntry` and :func:`register_algorithm`
  (:mod:`warp_drive.config.algorithms`, which checks a new entry against the contract).
* One folder per algorithm with its config inside: :mod:`.actor_critic` (A2C, PPO), :mod:`.ddpg`, :mod:`.sac`.
* The A2C/PPO losses, returns/GAE and update loop (modules of :mod:`.actor_critic`), re-exported here, and
  the normalizers (:mod:`.normalization`): pure PyTorch with no env knowledge; tensors may live on any
  device and nothing here synchronizes with the host (no ``.item()``, no branching on tensor values).
"""

from warp_drive.config.algorithms import AlgorithmEntry, register_algorithm
from warp_drive.training.algorithms.actor_critic.a2c import A2C, a2c_loss, explained_variance, value_loss
from warp_drive.training.algorithms.base import BuildContext, Policy, PolicyContractError, UpdateContext
from warp_drive.training.models.distributions import (
    HeadOutput,
    categorical_log_prob_entropy,
    gaussian_log_prob_entropy,
    log_prob_and_entropy,
)
from warp_drive.training.algorithms.normalization import ObsNormalizer, RewardNormalizer, ValueNormalizer, standardize
from warp_drive.training.algorithms.actor_critic.ppo import PPO, ppo_loss
from warp_drive.training.algorithms.actor_critic.returns import compute_gae, discounted_returns
from warp_drive.training.algorithms.actor_critic.update import grad_norm_and_clip, update_policy

__all__ = [
    "A2C",
    "AlgorithmEntry",
    "BuildContext",
    "PPO",
    "Policy",
    "PolicyContractError",
    "HeadOutput",
    "ObsNormalizer",
    "RewardNormalizer",
    "ValueNormalizer",
    "a2c_loss",
    "categorical_log_prob_entropy",
    "compute_gae",
    "discounted_returns",
    "explained_variance",
    "gaussian_log_prob_entropy",
    "grad_norm_and_clip",
    "log_prob_and_entropy",
    "ppo_loss",
    "register_algorithm",
    "standardize",
    "UpdateContext",
    "update_policy",
    "value_loss",
]
