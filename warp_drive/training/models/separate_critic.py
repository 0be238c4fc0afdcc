"""An actor-critic MLP whose critic sees another input than its actor (``policy.<tag>.critic_input``).

:class:`FullyConnectedSeparateCritic` is :class:`~warp_drive.training.models.fully_connected.FullyConnected`'s
actor (trunk and policy heads on the actor input) with a critic network of its own: the same hidden widths
and activation over the critic input, under the value head. It is what ``model.type: fully_connected``
builds when the critic input differs from the actor's (:mod:`warp_drive.training.network_inputs`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from warp_drive.errors import DataShapeError
from warp_drive.training.models.action_spec import ActionSpec, ObsDims, feature_shape
from warp_drive.training.models.actor_critic import init_linear_layers
from warp_drive.training.models.distributions import HeadOutput
from warp_drive.training.models.fully_connected import FullyConnected, first_mask, hidden_layers
from warp_drive.training.models.masked_input import split_masks
from warp_drive.training.models.obs_normalizer import ObsNormalizer

Tensor = torch.Tensor
#: the keys of a two-network input (:mod:`warp_drive.training.network_inputs` composes it)
ACTOR, CRITIC = "actor", "critic"


def split_inputs(obs: Any) -> tuple[Any, Tensor]:
    """``(actor input, critic input)`` of a two-network input ``{"actor": ..., "critic": ...}``.

    Raises:
        DataShapeError: ``obs`` is not such a mapping.
    """
    if not isinstance(obs, Mapping) or set(obs) != {ACTOR, CRITIC}:
        got = sorted(obs) if isinstance(obs, Mapping) else type(obs).__name__
        raise DataShapeError(f"a model with a separate critic takes {{'{ACTOR}': ..., '{CRITIC}': ...}}; got {got}. "
                             "Its policy's critic_input differs from its actor_input: pass both inputs.")
    return obs[ACTOR], obs[CRITIC]


class FullyConnectedSeparateCritic(FullyConnected):
    """:class:`FullyConnected` (its actor) and a critic MLP of its own on ``critic_dims`` inputs.

    Args: :class:`FullyConnected`'s, and
        critic_dims: feature shape of one agent's critic input (a Box shape).

    With ``normalize_obs`` the critic input has running statistics of its own.

    Shapes:
        obs: ``{"actor": (*lead, *obs_dims), "critic": (*lead, *critic_dims)}``;
        forward -> (head outputs as :class:`FullyConnected`'s, (*lead,) values).
    """

    def __init__(self, obs_dims: ObsDims, action_spec: ActionSpec | Sequence[int], fc_dims: Sequence[int] = (64, 64),
                 *, critic_dims: ObsDims, init_method: str = "default", normalize_obs: bool = False,
                 activation: str = "relu", **kwargs: Any) -> None:
        super().__init__(obs_dims, action_spec, fc_dims, init_method=init_method, normalize_obs=normalize_obs,
                         activation=activation, **kwargs)
        self.critic_shape = feature_shape(critic_dims, "critic_dims")
        size = math.prod(self.critic_shape)
        self.critic_normalizer = ObsNormalizer(size) if normalize_obs else None
        self.critic_trunk, width = hidden_layers(size, fc_dims, activation)
        self.value_head = nn.Linear(width, 1)  # on the critic's last layer
        init_linear_layers(nn.ModuleList([self.critic_trunk, self.value_head]), init_method, {self.value_head: 1.0})

    @classmethod
    def from_config(cls, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec,
                    critic_dims: ObsDims | None = None) -> FullyConnectedSeparateCritic:
        """Builds the model from a :class:`~warp_drive.config.ModelConfig` and the critic input's dims.

        Raises:
            DataShapeError: no ``critic_dims``.
        """
        if critic_dims is None:
            raise DataShapeError(f"{cls.__name__} needs critic_dims (the critic input's feature shape).")
        return cls(obs_dims, action_spec, critic_dims=critic_dims, **cls.config_kwargs(model_config))

    def forward(self, obs: Any, action_mask: Tensor | None = None) -> tuple[list[HeadOutput], Tensor]:
        obs, input_mask, _ = split_masks(obs)
        actor, critic = split_inputs(obs)
        x, obs_mask = self.flatten_obs(actor)
        if self.obs_normalizer is not None:
            x = self.obs_normalizer(x)
        outputs, _ = self._heads(self._trunk(x))
        values = self.value_head(self._trunk(self._critic_features(critic), self.critic_trunk)).squeeze(-1)
        return self.head_outputs(outputs, first_mask(action_mask, input_mask, obs_mask)), values

    def _critic_features(self, critic: Tensor) -> Tensor:
        """The critic input flattened to ``(*lead, features)`` in the value head's dtype, normalized if asked
        (shared with :class:`~warp_drive.training.models.gru.GRUActorCritic`)."""
        shape = self.critic_shape
        if tuple(critic.shape[critic.dim() - len(shape):]) != shape:
            raise DataShapeError(f"critic input shape {tuple(critic.shape)} does not end in the model's critic "
                                 f"dims {shape}.")
        c = critic.reshape(*critic.shape[: critic.dim() - len(shape)], -1).to(self.value_head.weight.dtype)
        return c if self.critic_normalizer is None else self.critic_normalizer(c)

    def _concat_head_weights(self) -> tuple[Tensor, Tensor]:
        """The policy heads' weights only (the value head reads the critic's layer)."""
        heads = list(self.policy_heads)
        return torch.cat([m.weight for m in heads]), torch.cat([m.bias for m in heads])

    def _heads(self, h: Tensor) -> tuple[list[Tensor], None]:
        """The policy heads' raw outputs (one GEMM); no values (see :meth:`forward`)."""
        if self._head_weights is not None and not torch.is_grad_enabled():
            weight, bias = self._head_weights
        else:
            weight, bias = self._concat_head_weights()
        out = torch.nn.functional.linear(h, weight, bias)
        return list(torch.split(out, [m.out_features for m in self.policy_heads], dim=-1)), None

    @torch.no_grad()
    def update_obs_normalizer(self, obs: Any) -> None:
        """Merges both inputs into their running statistics (a no-op without ``normalize_obs``); in a masked
        input, the active agents' only."""
        if self.obs_normalizer is None:
            return
        obs, _, active = split_masks(obs)
        actor, critic = split_inputs(obs)
        self.obs_normalizer.update(self.flatten_obs(actor)[0], active)
        shape = self.critic_shape
        self.critic_normalizer.update(critic.reshape(*critic.shape[: critic.dim() - len(shape)], -1), active)
