"""DDPG's networks: a deterministic actor mu(s) and an action-value critic Q(s, a).

Parameter names are 2.7.1's (``fc.<i>.0.weight``, ``policy_head.*`` for the actor,
``vf_head.*`` for the critic), so 2.7.1's saved DDPG ``.state_dict`` files load unchanged and files
written here load in 2.7.1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.models.action_spec import ActionSpec, ObsDims, feature_shape

Tensor = torch.Tensor


def box_obs_shape(obs_dims: ObsDims) -> tuple[int, ...]:
    """The feature shape of one Box observation (``obs_dims`` an int or a shape).

    Raises:
        DataShapeError: a Dict observation, or a size below 1.
    """
    if isinstance(obs_dims, Mapping):
        raise DataShapeError(
            f"actor and action-value models (DDPG, SAC) take Box observations; got a Dict observation "
            f"{dict(obs_dims)}. Concatenate the keys into one `observations` array in the env.")
    return feature_shape(obs_dims)


def continuous_action_dim(action_spec: ActionSpec | int) -> int:
    """The dimension d of a Box action (``action_spec`` an :class:`ActionSpec` or d itself).

    Raises:
        ConfigError: categorical actions.
    """
    if isinstance(action_spec, int):
        return action_spec
    if not action_spec.is_gaussian:
        raise ConfigError(
            f"DDPG and SAC need continuous (Box) actions; this policy's actions are categorical "
            f"{action_spec.categorical}. Use `algorithm: A2C` or PPO.")
    return action_spec.gaussian_dim


def mlp_trunk(width: int, fc_dims: Sequence[int]) -> tuple[nn.ModuleDict, int]:
    """Hidden layers over ``width`` inputs in 2.7.1's layout, ``fc["<i>"] = Sequential(Linear, ReLU)``;
    returns them and the last width."""
    fc = nn.ModuleDict()
    for i, hidden in enumerate(fc_dims):
        if int(hidden) < 1:
            raise DataShapeError(f"fc_dims[{i}]={hidden} must be >= 1.")
        fc[str(i)] = nn.Sequential(nn.Linear(width, int(hidden)), nn.ReLU())
        width = int(hidden)
    return fc, width


def init_linear_layers(module: nn.Module, init_method: str, gains: Mapping[nn.Module, float] | None = None) -> None:
    """Re-initializes every ``nn.Linear`` of ``module``: ``default`` (PyTorch's, unchanged), ``xavier``
    or ``orthogonal`` (gain ``gains[layer]``, by default sqrt 2; zero bias)."""
    if init_method == "default":
        return
    if init_method not in ("xavier", "orthogonal"):
        raise ConfigError(f"init_method={init_method!r} is unknown; expected default, xavier or orthogonal.")
    for m in module.modules():
        if isinstance(m, nn.Linear):
            if init_method == "xavier":
                nn.init.xavier_uniform_(m.weight)
            else:
                nn.init.orthogonal_(m.weight, gain=(gains or {}).get(m, math.sqrt(2.0)))
                nn.init.zeros_(m.bias)


class FullyConnectedActor(nn.Module):
    """Deterministic policy: ``output_b + output_w * tanh(Linear(MLP(obs)))``.

    Args:
        obs_dims: Feature shape of one observation.
        action_spec: An :class:`ActionSpec` with a Gaussian (Box) dimension d, or d itself.
        fc_dims: Hidden widths (``Linear -> ReLU`` each).
        init_method: ``default`` (PyTorch), ``xavier`` or ``orthogonal``.
        output_w, output_b: Action scale and offset (2.7.1's keys; default 1 and 0).

    Shapes:
        obs: (*lead, *obs_dims) -> actions (*lead, d).
    """

    def __init__(self, obs_dims: ObsDims, action_spec: ActionSpec | int, fc_dims: Sequence[int] = (64, 64), *,
                 init_method: str = "default", output_w: float | None = None, output_b: float | None = None) -> None:
        super().__init__()
        self.obs_shape = box_obs_shape(obs_dims)
        self.action_dim = continuous_action_dim(action_spec)
        self.action_spec = action_spec if isinstance(action_spec, ActionSpec) else ActionSpec(gaussian_dim=self.action_dim)
        self.action_scale = 1.0 if output_w is None else float(output_w)
        self.action_bias = 0.0 if output_b is None else float(output_b)
        self.fc, width = mlp_trunk(math.prod(self.obs_shape), fc_dims)
        self.policy_head = nn.Linear(width, self.action_dim)
        init_linear_layers(self, init_method)

    @classmethod
    def from_config(cls, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec) -> FullyConnectedActor:
        return cls(obs_dims, action_spec, model_config.fc_dims, init_method=model_config.init_method,
                   output_w=model_config.output_w, output_b=model_config.output_b, **dict(model_config.kwargs))

    def forward(self, obs: Tensor) -> Tensor:
        x = obs.reshape(*obs.shape[: obs.dim() - len(self.obs_shape)], -1).to(self.policy_head.weight.dtype)
        for layer in self.fc.values():
            x = layer(x)
        return self.action_bias + self.action_scale * torch.tanh(self.policy_head(x))


class FullyConnectedActionValueCritic(nn.Module):
    """Action value ``Q(s, a)``: an MLP over ``concat(flat obs, action)`` and a scalar head.

    Args: as :class:`FullyConnectedActor`'s first four.

    Shapes:
        obs: (*lead, *obs_dims); action: (*lead, d) or a list of (*lead, 1) (2.7.1's per-dim heads)
        -> (*lead,) values.
    """

    def __init__(self, obs_dims: ObsDims, action_spec: ActionSpec | int, fc_dims: Sequence[int] = (64, 64), *,
                 init_method: str = "default") -> None:
        super().__init__()
        self.obs_shape = box_obs_shape(obs_dims)
        self.action_dim = continuous_action_dim(action_spec)
        self.action_spec = action_spec if isinstance(action_spec, ActionSpec) else ActionSpec(gaussian_dim=self.action_dim)
        self.fc, width = mlp_trunk(math.prod(self.obs_shape) + self.action_dim, fc_dims)
        self.vf_head = nn.Linear(width, 1)
        init_linear_layers(self, init_method)

    @classmethod
    def from_config(cls, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec) -> FullyConnectedActionValueCritic:
        if model_config.output_w is not None or model_config.output_b is not None:
            raise ConfigError("output_w / output_b scale the actor's actions; remove them from the critic's model section.")
        return cls(obs_dims, action_spec, model_config.fc_dims, init_method=model_config.init_method,
                   **dict(model_config.kwargs))

    def forward(self, obs: Tensor, action: Tensor | Sequence[Tensor]) -> Tensor:
        if isinstance(action, (list, tuple)):
            action = torch.cat(list(action), dim=-1)
        lead = obs.shape[: obs.dim() - len(self.obs_shape)]
        dtype = self.vf_head.weight.dtype
        if action.shape[-1] != self.action_dim or tuple(action.shape[:-1]) != tuple(lead):
            raise DataShapeError(f"action shape {tuple(action.shape)} does not match observations {tuple(obs.shape)}: "
                                 f"expected {(*lead, self.action_dim)}.")
        x = torch.cat((obs.reshape(*lead, -1).to(dtype), action.to(dtype)), dim=-1)
        for layer in self.fc.values():
            x = layer(x)
        return self.vf_head(x).squeeze(-1)
