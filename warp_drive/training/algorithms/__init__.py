"""Policy-gradient algorithms (A2C, PPO), returns/GAE and the update loop.

Pure PyTorch, no env knowledge; tensors may live on any device and nothing here synchronizes
with the host (no ``.item()``, no branching on tensor values).
"""

from warp_drive.training.algorithms.a2c import A2C, a2c_loss, explained_variance, value_loss
from warp_drive.training.algorithms.distributions import (
    HeadOutput,
    categorical_log_prob_entropy,
    gaussian_log_prob_entropy,
    log_prob_and_entropy,
)
from warp_drive.training.algorithms.normalization import ObsNormalizer, RewardNormalizer, ValueNormalizer, standardize
from warp_drive.training.algorithms.ppo import PPO, make_algorithm, ppo_loss
from warp_drive.training.algorithms.returns import compute_gae, discounted_returns
from warp_drive.training.algorithms.update import grad_norm_and_clip, update_policy

__all__ = [
    "A2C",
    "PPO",
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
    "make_algorithm",
    "ppo_loss",
    "standardize",
    "update_policy",
    "value_loss",
]
