"""SAC's actor: a Gaussian over pre-squash actions ``u``, squashed by ``tanh`` into the unit box.

The network maps observations to ``(mean, log_std)`` of ``u``; an action in the unit box is
``y = tanh(u)`` and one in env units ``a = bias + scale * y``, with ``scale = (high - low) / 2`` and
``bias = (high + low) / 2`` of the Box (:class:`ActionBounds`). Densities (change of variables)::

    log p(y) = sum_j [ log N(u_j; mean_j, std_j) - log(1 - tanh(u_j)^2) ]
    log p(a) = log p(y) - sum_j log scale_j

with ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2 u))`` (no ``1 - y^2`` that rounds to 0).
Registered in the ModelFactory as ``squashed_gaussian_actor``; parameter names: the trunk
``fc.<i>.0.*`` (2.7.1's layout), ``mean_head.*``, ``log_std_head.*``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.models.action_spec import ActionSpec, ObsDims
from warp_drive.training.models.actor_critic import box_obs_shape, continuous_action_dim, init_linear_layers, mlp_trunk

Tensor = torch.Tensor
#: clamp of the log standard deviation (the SAC paper's implementation: [-20, 2])
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class SquashedGaussianActor(nn.Module):
    """Observations -> ``(mean, log_std)`` of the pre-squash Gaussian (see the module docstring).

    Args:
        obs_dims: Feature shape of one (Box) observation.
        action_spec: An :class:`ActionSpec` with a Gaussian (Box) dimension d, or d itself.
        fc_dims: Hidden widths (``Linear -> ReLU`` each).
        init_method: ``default`` (PyTorch), ``xavier`` or ``orthogonal``.
        log_std_min, log_std_max: clamp of the log standard deviation.

    Shapes:
        obs: ``(*lead, *obs_dims)`` -> mean, log_std: ``(*lead, d)`` each.
    """

    def __init__(self, obs_dims: ObsDims, action_spec: ActionSpec | int, fc_dims: Sequence[int] = (256, 256), *,
                 init_method: str = "default", log_std_min: float = LOG_STD_MIN, log_std_max: float = LOG_STD_MAX) -> None:
        super().__init__()
        if not (math.isfinite(log_std_min) and math.isfinite(log_std_max)) or log_std_min >= log_std_max:
            raise ConfigError(f"log_std_min={log_std_min}, log_std_max={log_std_max}: need finite numbers with "
                              f"log_std_min < log_std_max (default {LOG_STD_MIN}, {LOG_STD_MAX}); set them in model.actor.kwargs.")
        self.obs_shape = box_obs_shape(obs_dims)
        self.action_dim = continuous_action_dim(action_spec)
        self.action_spec = action_spec if isinstance(action_spec, ActionSpec) else ActionSpec(gaussian_dim=self.action_dim)
        self.log_std_min, self.log_std_max = float(log_std_min), float(log_std_max)
        self.fc, width = mlp_trunk(math.prod(self.obs_shape), fc_dims)
        self.mean_head = nn.Linear(width, self.action_dim)
        self.log_std_head = nn.Linear(width, self.action_dim)
        init_linear_layers(self, init_method)

    @classmethod
    def from_config(cls, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec) -> SquashedGaussianActor:
        """From a ``model.actor`` section (``kwargs``: ``log_std_min``, ``log_std_max``).

        Raises:
            ConfigError: ``output_w`` / ``output_b`` are set (the Box's bounds scale the actions).
        """
        if model_config.output_w is not None or model_config.output_b is not None:
            raise ConfigError("output_w / output_b: a squashed Gaussian actor scales tanh to the action space's "
                              "low and high itself; remove them from the actor's model section.")
        return cls(obs_dims, action_spec, model_config.fc_dims, init_method=model_config.init_method,
                   **dict(model_config.kwargs))

    def forward(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        lead = obs.shape[: obs.dim() - len(self.obs_shape)]
        x = obs.reshape(*lead, -1).to(self.mean_head.weight.dtype)
        for layer in self.fc.values():
            x = layer(x)
        return self.mean_head(x), self.log_std_head(x).clamp(self.log_std_min, self.log_std_max)


def log_one_minus_tanh_squared(u: Tensor) -> Tensor:
    """``log(1 - tanh(u)^2)``, stable for any ``u`` (elementwise)."""
    return 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))


def squashed_log_prob(u: Tensor, mean: Tensor, log_std: Tensor, noise: Tensor | None = None) -> Tensor:
    """Log density of ``y = tanh(u)`` in the unit box, ``u ~ N(mean, exp(log_std)^2)`` per dimension.

    Args:
        u, mean, log_std: ``(*lead, d)``. noise: ``(u - mean) / std`` when the caller has it (exact).

    Returns:
        ``(*lead,)``, summed over the d dimensions.
    """
    z = (u - mean) * torch.exp(-log_std) if noise is None else noise
    gaussian = -0.5 * z * z - log_std - _LOG_SQRT_2PI
    return (gaussian - log_one_minus_tanh_squared(u)).sum(-1)


def squashed_sample(mean: Tensor, log_std: Tensor, generator: torch.Generator | None = None,
                    greedy: bool = False, noise: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """A reparameterized draw ``y = tanh(mean + std * z)`` and its log density (float32 math).

    Args:
        mean, log_std: ``(*lead, d)`` from :class:`SquashedGaussianActor`.
        generator: draws ``z ~ N(0, 1)`` (on the tensors' device).
        greedy: ``y = tanh(mean)`` (no draw; the log density is that of the mode).
        noise: ``z`` itself, ``(*lead, d)`` standard normal (e.g. correlated over time), instead of a draw.

    Returns:
        ``(y (*lead, d) in [-1, 1], log_prob (*lead,))``.
    """
    mean, log_std = mean.float(), log_std.float()
    if greedy:
        noise = torch.zeros_like(mean)
    elif noise is None:
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
    u = mean + torch.exp(log_std) * noise
    return torch.tanh(u), squashed_log_prob(u, mean, log_std, noise)


@dataclass(frozen=True)
class ActionBounds:
    """The affine map between the unit box and a Box action space's ``[low, high]``.

    Attributes:
        scale, bias: (d,) float32 tensors, ``(high - low) / 2`` and ``(high + low) / 2``.
    """

    scale: Tensor
    bias: Tensor

    @classmethod
    def from_space(cls, space: Any, device: torch.device | str = "cpu") -> ActionBounds:
        """From a gymnasium ``Box`` (its flattened low and high).

        Raises:
            ConfigError: a bound is infinite or low >= high (tanh cannot reach it).
        """
        low = np.asarray(getattr(space, "low", np.nan), dtype=np.float64).reshape(-1)
        high = np.asarray(getattr(space, "high", np.nan), dtype=np.float64).reshape(-1)
        if low.size == 0 or not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))) or np.any(low >= high):
            raise ConfigError(f"a squashed Gaussian policy needs a Box action space with finite low < high; got "
                              f"low={low.tolist()[:4]}, high={high.tolist()[:4]}. Give the env's action space finite bounds.")
        as_tensor = lambda x: torch.as_tensor(x, dtype=torch.float32, device=device)  # noqa: E731
        return cls(as_tensor((high - low) / 2.0), as_tensor((high + low) / 2.0))

    def to_env(self, y: Tensor) -> Tensor:
        """Unit-box actions ``(*lead, d)`` -> env units."""
        return torch.addcmul(self.bias, self.scale, y)

    def to_unit(self, a: Tensor) -> Tensor:
        """Env-unit actions ``(*lead, d)`` -> the unit box (clamped to [-1, 1])."""
        return ((a.float() - self.bias) / self.scale).clamp(-1.0, 1.0)

    def log_det(self) -> Tensor:
        """``sum_j log scale_j``: what ``log p(a)`` in env units subtracts from ``log p(y)`` (0-d)."""
        return torch.log(self.scale).sum()

    def check_dim(self, action_dim: int) -> None:
        """Raises DataShapeError unless the Box has ``action_dim`` elements."""
        if self.scale.numel() != action_dim:
            raise DataShapeError(f"the action space has {self.scale.numel()} dimensions, the actor {action_dim}")
