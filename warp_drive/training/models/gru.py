"""A recurrent actor-critic: an MLP encoder, a GRU cell, then the heads (``policy.<tag>.model.type: gru``).

:class:`GRUActorCritic` is the built-in model of the recurrent contract (:mod:`warp_drive.training.models`,
"Recurrent models"): it carries a hidden state per row, reset where an episode starts. When the actor and
critic see the same input the GRU is one trunk under both heads (as ``fully_connected``'s MLP is); when the
policy's ``critic_input`` differs from its ``actor_input`` the critic is a network of its own, encoder and GRU
(as :mod:`~warp_drive.training.models.separate_critic`'s), and the state holds both GRUs' hidden states side by
side. Observation handling (Dict observations, action masks, ``normalize_obs``) and the heads are
:class:`~warp_drive.training.models.fully_connected.FullyConnected`'s.

One call serves both places a policy runs: the rollout, one step for every env (``starts`` None), and the
update, a whole rollout chunk (``starts`` given: truncated back-propagation through time over the chunk, the
state reset where an episode starts; :mod:`warp_drive.training.carried_state`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import nn

from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.models.action_spec import ActionSpec, ObsDims, feature_shape
from warp_drive.training.models.actor_critic import init_linear_layers
from warp_drive.training.models.distributions import HeadOutput
from warp_drive.training.models.fully_connected import FullyConnected, first_mask, hidden_layers
from warp_drive.training.models.masked_input import split_masks
from warp_drive.training.models.obs_normalizer import ObsNormalizer
from warp_drive.training.models.separate_critic import FullyConnectedSeparateCritic, split_inputs

Tensor = torch.Tensor


def is_recurrent(model: nn.Module) -> bool:
    """Whether ``model`` (or the model a DistributedDataParallel wrapper holds) follows the recurrent contract."""
    return bool(getattr(getattr(model, "module", model), "recurrent", False))


def unroll(cell: nn.GRUCell, x: Tensor, state: Tensor, starts: Tensor | None) -> tuple[Tensor, Tensor]:
    """``cell`` over the time axis of ``x`` from ``state``, the state zeroed (the initial state) before every
    step where ``starts`` is set; returns every step's output state and the last one.

    Shapes:
        x: (T, *lead, W); state: (*lead, H); starts: (T, *lead) bool or None;
        outputs: (T, *lead, H) and (*lead, H).
    """
    lead, width = state.shape[:-1], state.shape[-1]
    h = state.reshape(-1, width)
    xs = x.reshape(x.shape[0], -1, x.shape[-1]).unbind(0)  # one backward for all steps (indexing: one per step)
    resets = [None] * len(xs) if starts is None else starts.reshape(len(xs), -1, 1).unbind(0)
    steps = []
    for x_t, reset in zip(xs, resets):
        if reset is not None:
            h = h.masked_fill(reset, 0.0)
        h = cell(x_t, h)
        steps.append(h)
    return torch.stack(steps).reshape(x.shape[0], *lead, width), h.reshape(*lead, width)


def init_gru(cell: nn.GRUCell, init_method: str) -> None:
    """``default``: PyTorch's; ``orthogonal``: orthogonal input and recurrent weights, zero biases (the MAPPO
    paper's recurrent layers); ``xavier``: xavier_uniform weights."""
    if init_method == "default":
        return
    for weight in (cell.weight_ih, cell.weight_hh):
        nn.init.orthogonal_(weight) if init_method == "orthogonal" else nn.init.xavier_uniform_(weight)
    if init_method == "orthogonal":
        nn.init.zeros_(cell.bias_ih)
        nn.init.zeros_(cell.bias_hh)


class GRUActorCritic(FullyConnected):
    """Actor-critic with carried state: ``encoder MLP (fc_dims) -> GRUCell(hidden_size) -> heads``.

    Args:
        obs_dims, action_spec, init_method, log_std_init, action_scale, action_bias, normalize_obs, activation:
            as :class:`FullyConnected`'s (``fc_dims`` are the encoder's widths; may be empty).
        hidden_size: the GRU's state width H (``model.kwargs.hidden_size``).
        critic_dims: the critic input's feature shape when it differs from the actor's (a critic network of its
            own, encoder and GRU; the factory passes it); None: one trunk under both heads.

    Shapes:
        obs: (*lead, *obs_dims) (dict observations and ``{"actor", "critic"}`` inputs as :class:`FullyConnected`
        and :class:`~warp_drive.training.models.separate_critic.FullyConnectedSeparateCritic` take them), with a
        time axis first when ``starts`` is given; state: (*lead, state_size), state_size = H, or 2 H with a
        critic of its own (actor's, then critic's); starts: (T, *lead) bool;
        forward -> ((head outputs, values), state) with the outputs' leading shape that of ``obs``.
    """

    #: the model follows the recurrent contract (:mod:`warp_drive.training.models`)
    recurrent: ClassVar[bool] = True

    def __init__(self, obs_dims: ObsDims, action_spec: ActionSpec | Sequence[int], fc_dims: Sequence[int] = (64,), *,
                 hidden_size: int = 64, critic_dims: ObsDims | None = None, init_method: str = "default",
                 log_std_init: float = 0.0, action_scale: float | None = None, action_bias: float | None = None,
                 normalize_obs: bool = False, activation: str = "relu") -> None:
        nn.Module.__init__(self)
        if isinstance(hidden_size, bool) or not isinstance(hidden_size, int) or not 1 <= hidden_size <= 4096:
            raise ConfigError(f"hidden_size={hidden_size!r} (model.kwargs.hidden_size) must be a whole number of "
                              "units from 1 to 4096, e.g. 64")
        self._init_io(obs_dims, action_spec, action_scale=action_scale, action_bias=action_bias,
                      normalize_obs=normalize_obs, activation=activation)
        spec = self.action_spec
        self.hidden_size = hidden_size
        self.trunk, width = hidden_layers(self.obs_size, fc_dims, activation)
        self.gru = nn.GRUCell(width, hidden_size)
        if spec.is_gaussian:
            self.policy_heads = nn.ModuleList([nn.Linear(hidden_size, spec.gaussian_dim)])
            self.log_std: nn.Parameter | None = nn.Parameter(torch.full((spec.gaussian_dim,), float(log_std_init)))
        else:
            self.policy_heads = nn.ModuleList(nn.Linear(hidden_size, n) for n in spec.categorical)
            self.log_std = None
        self.separate = critic_dims is not None
        if self.separate:
            self.critic_shape = feature_shape(critic_dims, "critic_dims")
            size = math.prod(self.critic_shape)
            self.critic_normalizer = ObsNormalizer(size) if normalize_obs else None
            self.critic_trunk, critic_width = hidden_layers(size, fc_dims, activation)
            self.critic_gru = nn.GRUCell(critic_width, hidden_size)
        self.value_head = nn.Linear(hidden_size, 1)
        self._head_weights: tuple[Tensor, Tensor] | None = None  # see cache_head_weights
        init_linear_layers(self, init_method, {**{head: 0.01 for head in self.policy_heads}, self.value_head: 1.0})
        for cell in (self.gru, getattr(self, "critic_gru", None)):
            if cell is not None:
                init_gru(cell, init_method)

    @classmethod
    def from_config(cls, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec,
                    critic_dims: ObsDims | None = None) -> GRUActorCritic:
        """Builds the model from a :class:`~warp_drive.config.ModelConfig` (and the critic input's dims, if any)."""
        return cls(obs_dims, action_spec, critic_dims=critic_dims, **cls.config_kwargs(model_config))

    @property
    def state_size(self) -> int:
        """Width of one row's state: H, or 2 H with a critic network of its own."""
        return self.hidden_size * (2 if self.separate else 1)

    def initial_state(self, lead: tuple[int, ...]) -> Tensor:
        """The state of a row whose episode starts: zeros ``(*lead, state_size)`` on the model's device."""
        return torch.zeros((*lead, self.state_size), dtype=self.value_head.weight.dtype,
                           device=self.value_head.weight.device)

    def forward(self, obs: Any, state: Tensor, starts: Tensor | None = None
                ) -> tuple[tuple[list[HeadOutput], Tensor], Tensor]:
        """One step (``starts`` None) or a sequence (time first; the state zeroed where ``starts`` is set, before
        that step): ``((head outputs, values), state after the last step)`` (the class docstring's Shapes)."""
        obs, input_mask, _ = split_masks(obs)  # a masked input (agent_masks.py): the legal actions
        actor, critic = split_inputs(obs) if self.separate else (obs, None)
        H = self.hidden_size
        if state.shape[-1] != self.state_size:
            raise DataShapeError(f"state has {state.shape[-1]} features; this model carries {self.state_size}")
        x, obs_mask = self.flatten_obs(actor)
        mask = first_mask(input_mask, obs_mask)
        if self.obs_normalizer is not None:
            x = self.obs_normalizer(x)
        h, h_last = self._recur(self.gru, self._trunk(x), state[..., :H], starts)
        if not self.separate:
            outputs, values = self._heads(h)
            return (self.head_outputs(outputs, mask), values), h_last
        c = self._critic_features(critic)
        hc, hc_last = self._recur(self.critic_gru, self._trunk(c, self.critic_trunk), state[..., H:], starts)
        outputs, _ = self._heads(h)
        values = self.value_head(hc).squeeze(-1)
        return (self.head_outputs(outputs, mask), values), torch.cat((h_last, hc_last), dim=-1)

    @staticmethod
    def _recur(cell: nn.GRUCell, x: Tensor, state: Tensor, starts: Tensor | None) -> tuple[Tensor, Tensor]:
        """``(outputs, last state)``: one step (no time axis) or :func:`unroll` over a sequence."""
        if starts is None:
            h = cell(x.reshape(-1, x.shape[-1]), state.reshape(-1, state.shape[-1])).reshape(state.shape)
            return h, h
        return unroll(cell, x, state, starts)

    _critic_features = FullyConnectedSeparateCritic._critic_features

    def _concat_head_weights(self) -> tuple[Tensor, Tensor]:
        """The heads on the actor's state: the policy heads, and the value head with one trunk."""
        linears = [*self.policy_heads] + ([] if self.separate else [self.value_head])
        return torch.cat([m.weight for m in linears]), torch.cat([m.bias for m in linears])

    def _heads(self, h: Tensor) -> tuple[list[Tensor], Tensor | None]:
        """The policy heads' raw outputs and, with one trunk, the values, as one GEMM on the actor's state."""
        if self._head_weights is not None and not torch.is_grad_enabled():
            weight, bias = self._head_weights
        else:
            weight, bias = self._concat_head_weights()
        out = torch.nn.functional.linear(h, weight, bias)
        sizes = [m.out_features for m in self.policy_heads]
        if self.separate:
            return list(torch.split(out, sizes, dim=-1)), None
        *outputs, values = torch.split(out, [*sizes, 1], dim=-1)
        return list(outputs), values.squeeze(-1)

    @torch.no_grad()
    def update_obs_normalizer(self, obs: Any) -> None:
        """Merges the inputs into their running statistics (a no-op without ``normalize_obs``)."""
        if self.obs_normalizer is None:
            return
        obs, _, active = split_masks(obs)  # with inactive agents: the active rows only
        actor, critic = split_inputs(obs) if self.separate else (obs, None)
        self.obs_normalizer.update(self.flatten_obs(actor)[0], active)
        if critic is not None:
            shape = self.critic_shape
            self.critic_normalizer.update(critic.reshape(*critic.shape[: critic.dim() - len(shape)], -1), active)
