"""Fully connected actor-critic with a shared trunk."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from warp_drive.compat271.reference_format import from_reference_state_dict, is_reference_state_dict
from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.models.distributions import HeadOutput
from warp_drive.training.models.obs_normalizer import ObsNormalizer
from warp_drive.training.models.action_spec import ActionSpec, ObsDims, feature_shape
from warp_drive.training.models.actor_critic import init_linear_layers
from warp_drive.training.models.fused_linear import linear_relu, padded_linear
from warp_drive.training.models.masked_input import mask_logits, split_masks

Tensor = torch.Tensor


#: ``model.kwargs.activation`` -> the hidden layers' activation module.
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}


def hidden_layers(width: int, fc_dims: Sequence[int], activation: str) -> tuple[nn.Sequential, int]:
    """``Linear -> activation`` per ``fc_dims`` entry over ``width`` inputs; returns them and the last width."""
    layers: list[nn.Module] = []
    for i, hidden in enumerate(fc_dims):
        if int(hidden) < 1:
            raise DataShapeError(f"fc_dims[{i}]={hidden} must be >= 1.")
        layers += [nn.Linear(width, int(hidden)), ACTIVATIONS[activation]()]
        width = int(hidden)
    return nn.Sequential(*layers), width


def first_mask(*masks: Tensor | None) -> Tensor | None:
    """The first of ``masks`` that is not None (a forward's ``action_mask`` argument, then a masked input's, then
    a Dict observation's ``action_mask`` key), or None."""
    return next((m for m in masks if m is not None), None)


class FullyConnected(nn.Module):
    """Actor-critic MLP: ``Linear -> ReLU`` (or ``Tanh``) per ``fc_dims`` entry, then policy and value heads.

    Observations may be one tensor or a dict of tensors. Dict keys are flattened and
    concatenated in sorted key order, except ``action_mask``: a 0/1 tensor over all categorical
    logits (sum of head sizes) that sets masked logits to the dtype's minimum, so those actions
    get probability 0. A mask can also be passed as ``forward(obs, action_mask=...)``, or come in a masked
    input (:mod:`~warp_drive.training.models.masked_input`: the env's ``action_mask`` and ``active`` arrays),
    which this model takes (``takes_agent_masks``); its observation normalizer then merges the statistics of
    active agents' observations only.

    Heads: one ``Linear(fc_last, n_h)`` + softmax per categorical head, or for a Gaussian
    action spec a ``Linear(fc_last, d)`` mean and a state-independent learnable ``log_std``.

    ``load_state_dict`` also accepts WarpDrive 2.7.1's parameter names (``fc.<i>.0.*``,
    ``policy_head.<h>.*``, ``vf_head.*``, see :mod:`~warp_drive.compat271.reference_format`),
    so 2.7.1's saved policies load unchanged.

    Args:
        obs_dims: Feature shape of one observation (int or shape), or a dict key -> shape.
        action_spec: An :class:`ActionSpec`, or a list of categorical head sizes.
        fc_dims: Hidden layer widths (may be empty: linear heads on the observation).
        init_method: ``"default"`` (PyTorch), ``"xavier"`` (xavier_uniform weights) or
            ``"orthogonal"`` (gain sqrt(2) trunk, 0.01 policy, 1 value; zero biases).
        log_std_init: Initial log standard deviation of the Gaussian head.
        action_scale, action_bias: Gaussian head only (2.7.1's ``output_w`` / ``output_b``): the
            mean becomes ``action_bias + action_scale * tanh(linear)``; None (both) keeps the
            unbounded linear mean.
        normalize_obs: Standardize the flattened observation by running per-feature statistics before the trunk
            (:class:`~warp_drive.training.algorithms.normalization.ObsNormalizer`, clipped to +/-10). Config:
            ``policy.<tag>.model.kwargs.normalize_obs: true``. False (default): the raw observation, as 2.7.1.
        activation: ``"relu"`` (default, as 2.7.1) or ``"tanh"`` (stable-baselines3's ``MlpPolicy``
            default) after each hidden layer. Config: ``policy.<tag>.model.kwargs.activation``.

    Shapes:
        obs: (*lead, *obs_dims) or {key: (*lead, *obs_dims[key])};
        action_mask: (*lead, num_logits);
        forward -> ([ (*lead, n_h) probabilities per head ] or [((*lead, d) mean, (*lead, d) std)],
        (*lead,) values).
    """

    #: the forward reads a masked input (:mod:`~warp_drive.training.models.masked_input`)
    takes_agent_masks = True

    def __init__(
        self,
        obs_dims: ObsDims,
        action_spec: ActionSpec | Sequence[int],
        fc_dims: Sequence[int] = (64, 64),
        *,
        init_method: str = "default",
        log_std_init: float = 0.0,
        action_scale: float | None = None,
        action_bias: float | None = None,
        normalize_obs: bool = False,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self._init_io(obs_dims, action_spec, action_scale=action_scale, action_bias=action_bias,
                      normalize_obs=normalize_obs, activation=activation)
        action_spec = self.action_spec
        self.trunk, width = hidden_layers(self.obs_size, fc_dims, activation)
        if action_spec.is_gaussian:
            self.policy_heads = nn.ModuleList([nn.Linear(width, action_spec.gaussian_dim)])
            self.log_std: nn.Parameter | None = nn.Parameter(
                torch.full((action_spec.gaussian_dim,), float(log_std_init))
            )
        else:
            self.policy_heads = nn.ModuleList(nn.Linear(width, n) for n in action_spec.categorical)
            self.log_std = None
        self.value_head = nn.Linear(width, 1)
        self._head_weights: tuple[Tensor, Tensor] | None = None  # see cache_head_weights
        init_linear_layers(self, init_method, {**{head: 0.01 for head in self.policy_heads}, self.value_head: 1.0})

    def _init_io(self, obs_dims: ObsDims, action_spec: ActionSpec | Sequence[int], *, action_scale: float | None,
                 action_bias: float | None, normalize_obs: bool, activation: str) -> None:
        """What the model reads and writes, set before any layer (no parameters, so the weights' draws do not
        move): the checked ``activation`` and ``normalize_obs``, the action spec and Gaussian bounds, the
        observation layout (``obs_keys``, ``obs_shapes``, ``obs_size``) and the observation normalizer. A model
        built on this class's observation and head handling
        (:class:`~warp_drive.training.models.gru.GRUActorCritic`) calls it in its own constructor."""
        if not isinstance(normalize_obs, (bool, np.bool_)):
            raise ConfigError(f"normalize_obs={normalize_obs!r} must be true or false (model.kwargs.normalize_obs)")
        if activation not in ACTIVATIONS:
            raise ConfigError(f"activation={activation!r} (model.kwargs.activation) is unknown; choose one of "
                              f"{', '.join(ACTIVATIONS)}")
        self.activation = activation
        if not isinstance(action_spec, ActionSpec):
            action_spec = ActionSpec(categorical=tuple(action_spec))
        self.action_spec = action_spec
        self.bounded_mean = action_scale is not None or action_bias is not None
        if self.bounded_mean and not action_spec.is_gaussian:
            raise ConfigError(
                f"output_w={action_scale} / output_b={action_bias} scale continuous (Box) actions; this "
                f"policy's actions are categorical ({action_spec}). Remove `model.output_w` / `model.output_b`."
            )
        self.action_scale = 1.0 if action_scale is None else float(action_scale)
        self.action_bias = 0.0 if action_bias is None else float(action_bias)
        if isinstance(obs_dims, Mapping):
            shapes = {str(k): feature_shape(v, f"[{k!r}]") for k, v in obs_dims.items()}
            mask_shape = shapes.pop(Constants.ACTION_MASK, None)
            if mask_shape is not None and math.prod(mask_shape) != action_spec.num_logits:
                raise DataShapeError(
                    f"`{Constants.ACTION_MASK}` has {math.prod(mask_shape)} entries; expected the "
                    f"sum of categorical head sizes {action_spec.num_logits} ({action_spec})."
                )
            if not shapes:
                raise DataShapeError("dict observation has no feature keys besides the mask.")
            self.obs_keys: tuple[str, ...] | None = tuple(sorted(shapes))
            self.obs_shapes = shapes
        else:
            self.obs_keys = None
            self.obs_shapes = {"": feature_shape(obs_dims)}
        self.obs_size = sum(math.prod(s) for s in self.obs_shapes.values())
        self.obs_normalizer = ObsNormalizer(self.obs_size) if normalize_obs else None

    @classmethod
    def from_config(
        cls, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec
    ) -> FullyConnected:
        """Builds the model from a :class:`~warp_drive.config.ModelConfig`."""
        return cls(obs_dims, action_spec, **cls.config_kwargs(model_config))

    @staticmethod
    def config_kwargs(model_config: Any) -> dict[str, Any]:
        """The constructor's keywords from a :class:`~warp_drive.config.ModelConfig`."""
        return {"fc_dims": model_config.fc_dims, "init_method": model_config.init_method,
                "action_scale": getattr(model_config, "output_w", None),
                "action_bias": getattr(model_config, "output_b", None), **dict(model_config.kwargs)}

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """``nn.Module.load_state_dict``, also accepting 2.7.1's parameter names (mapped exactly)."""
        if is_reference_state_dict(state_dict):
            state_dict = from_reference_state_dict(state_dict)
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def flatten_obs(self, obs: Tensor | Mapping[str, Tensor]) -> tuple[Tensor, Tensor | None]:
        """Flattens observations to ``(*lead, obs_size)`` and extracts an ``action_mask`` key.

        Shapes:
            obs: see class docstring; outputs: (*lead, obs_size), (*lead, num_logits) or None.
        """
        dtype = self.value_head.weight.dtype
        if self.obs_keys is None:
            if isinstance(obs, Mapping):
                raise DataShapeError("this model was built for tensor observations; got a dict.")
            shape = self.obs_shapes[""]
            if tuple(obs.shape[obs.dim() - len(shape) :]) != shape:
                raise DataShapeError(
                    f"observation shape {tuple(obs.shape)} does not end in the model's obs "
                    f"dims {shape}."
                )
            return obs.reshape(*obs.shape[: obs.dim() - len(shape)], -1).to(dtype), None
        if not isinstance(obs, Mapping):
            raise DataShapeError(f"this model expects dict observations with keys {self.obs_keys}.")
        missing = [k for k in self.obs_keys if k not in obs]
        if missing:
            raise DataShapeError(f"observation dict lacks key(s) {missing}; got {sorted(obs)}.")
        parts = []
        for key in self.obs_keys:
            x, shape = obs[key], self.obs_shapes[key]
            parts.append(x.reshape(*x.shape[: x.dim() - len(shape)], -1).to(dtype))
        return torch.cat(parts, dim=-1), obs.get(Constants.ACTION_MASK)

    def forward(
        self, obs: Tensor | Mapping[str, Tensor], action_mask: Tensor | None = None
    ) -> tuple[list[HeadOutput], Tensor]:
        """Policy head outputs and state values (``forward`` in the class docstring's Shapes)."""
        obs, input_mask, _ = split_masks(obs)
        x, obs_mask = self.flatten_obs(obs)
        if self.obs_normalizer is not None:
            x = self.obs_normalizer(x)
        outputs, values = self._heads(self._trunk(x))
        return self.head_outputs(outputs, first_mask(action_mask, input_mask, obs_mask)), values

    def head_outputs(self, outputs: list[Tensor], mask: Tensor | None) -> list[HeadOutput]:
        """The policy heads' raw outputs as the contract's head outputs: a Gaussian's ``(mean, std)``, or per
        categorical head its probabilities (logits where ``mask`` is 0 set to the dtype's minimum)."""
        if self.log_std is not None:
            if mask is not None:
                raise DataShapeError("an action mask was given for a Gaussian (Box) action head.")
            mean = outputs[0]
            if self.bounded_mean:
                mean = self.action_bias + self.action_scale * torch.tanh(mean)
            return [(mean, self.log_std.exp().expand_as(mean))]
        if mask is not None:
            if mask.shape[-1] != self.action_spec.num_logits:
                raise DataShapeError(
                    f"action mask has {mask.shape[-1]} entries; expected "
                    f"{self.action_spec.num_logits} (sum of head sizes)."
                )
            outputs = mask_logits(outputs, mask, self.action_spec.categorical)
        return [torch.softmax(logits, dim=-1) for logits in outputs]

    @torch.no_grad()
    def update_obs_normalizer(self, obs: Tensor | Mapping[str, Tensor]) -> None:
        """Merges ``obs`` (any leading shape) into the running observation statistics; a no-op
        without ``normalize_obs``. Called by the policy update after its gradient steps. In a masked input only
        the active agents' observations count."""
        if self.obs_normalizer is not None:
            obs, _, active = split_masks(obs)
            self.obs_normalizer.update(self.flatten_obs(obs)[0], active)

    def _trunk(self, x: Tensor, trunk: nn.Sequential | None = None) -> Tensor:
        """``trunk(x)`` (default ``self.trunk``); with ReLU each ``Linear -> ReLU`` pair as one fused GEMM on CUDA
        (:func:`~warp_drive.training.models.fused_linear.linear_relu`)."""
        trunk = self.trunk if trunk is None else trunk
        if self.activation != "relu":
            return trunk(x)
        layers = list(trunk)
        for i in range(0, len(layers), 2):
            x = linear_relu(x, layers[i])
        return x

    def _concat_head_weights(self) -> tuple[Tensor, Tensor]:
        linears = [*self.policy_heads, self.value_head]
        return torch.cat([m.weight for m in linears]), torch.cat([m.bias for m in linears])

    def cache_head_weights(self, enabled: bool) -> None:
        """With ``enabled``, concatenate the heads' weights now and let no-grad forwards use that
        copy (two kernels fewer per forward) until ``cache_head_weights(False)``. The caller must
        turn it off before the weights change: the rollout keeps it on for one rollout
        (:func:`~warp_drive.training.rollout.cached_head_weights`)."""
        if not enabled:
            self._head_weights = None
            return
        with torch.no_grad():
            self._head_weights = self._concat_head_weights()

    def _heads(self, h: Tensor) -> tuple[list[Tensor], Tensor]:
        """The raw outputs of each policy head and the values (squeezed to the leading shape), as one GEMM
        instead of one per head; the parameters stay in their own ``nn.Linear`` modules."""
        linears = [*self.policy_heads, self.value_head]
        if self._head_weights is not None and not torch.is_grad_enabled():
            weight, bias = self._head_weights
        else:
            weight, bias = self._concat_head_weights()
        out = padded_linear(h, weight, bias)
        sizes = [m.out_features for m in linears]
        *outputs, values = torch.split(out, sizes, dim=-1)
        return list(outputs), values.squeeze(-1)
