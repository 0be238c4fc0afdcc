"""Policy models and the model registry.

Contract for a model (built-in or user-written ``torch.nn.Module``)
-------------------------------------------------------------------

Registration: ``ModelFactory().add("my_model", MyModel)`` (or ``"my_pkg.mod:MyModel"``); the run
config selects it with ``policy.<tag>.model.type: my_model``.

Construction: the trainer calls ``factory.build(model_config, obs_dims, action_spec)``, which uses
``MyModel.from_config(model_config, obs_dims, action_spec)`` if that classmethod exists, else
``MyModel(obs_dims, action_spec, **model_config.kwargs)``.

* ``obs_dims``: feature shape of one agent's observation, a tuple (from a Box space), or a dict
  ``{key: shape}`` for a Dict space (may include ``"action_mask"``). See
  :func:`obs_dims_from_space`.
* ``action_spec``: an :class:`ActionSpec` (:func:`action_heads_from_space`): categorical head
  sizes, or a Gaussian dimension.

Forward: ``model(obs) -> (head_outputs, values)``, for ANY leading shape ``lead`` (the trainer
calls it on ``(E, A)`` during rollouts and on ``(B, E, A)`` or ``(M, A)`` minibatches in updates):

* ``obs``: ``(*lead, *obs_dims)`` tensor or a dict of such tensors;
* ``head_outputs``: a list with, per categorical head, probabilities ``(*lead, n_h)`` (rows sum
  to 1; masked actions exactly 0), or for a Gaussian spec ``[(mean, std)]`` with ``(*lead, d)``
  each (std > 0);
* ``values``: ``(*lead,)`` state values (normalized units when ``normalize_return`` is on).

The model must not write to trainer buffers or keep per-step state itself (a recurrent model's state is the
policy's: below). It needs an ``action_spec`` attribute.

Critic input (the rollout hook "what a network sees", :mod:`warp_drive.training.network_inputs`): when a
policy's ``critic_input`` differs from its ``actor_input``, the factory passes the critic input's feature
shape as the keyword ``critic_dims`` (to ``from_config``, else the constructor; a model that takes none is
refused), ``obs_dims`` is then the actor input's, and ``obs`` is ``{"actor": (*lead, *obs_dims), "critic":
(*lead, *critic_dims)}``; ``values`` come from the critic input. ``fully_connected`` builds
:class:`~warp_drive.training.models.separate_critic.FullyConnectedSeparateCritic` then. When both see the
same (``local``: the agent's own observation), ``obs`` is that one input and one network may share a trunk.

Recurrent models (the rollout hook "carried state", :mod:`warp_drive.training.carried_state`): a model that
carries a hidden state from step to step declares it and is called with it:

* ``recurrent = True``, a class attribute (:func:`~warp_drive.training.models.gru.is_recurrent` reads it);
* ``initial_state(lead) -> (*lead, *S)``: the state of a row whose episode starts (the policy allocates its
  ``(E, A, *S)`` states from it once, on the model's device; the rollout resets a done env's rows to it);
* ``forward(obs, state, starts=None) -> ((head_outputs, values), new_state)``: one step for every row
  (``obs`` ``(*lead, ...)``, ``state`` ``(*lead, *S)``: the rollout, no grad), or with ``starts`` a sequence,
  time first (``obs`` ``(T, *lead, ...)``, ``starts`` ``(T, *lead)`` bool: reset the state to the initial one
  before step ``t`` where set), whose outputs have the leading shape ``(T, *lead)`` and whose returned state is
  the last step's (the update: truncated back-propagation through time over the rollout chunk, with gradients).
  One step and a sequence of one step must give the same outputs; the sequence's must equal the steps' one after
  another (the update's first minibatch then recomputes the rollout's log-probabilities and values).

Its policy keeps the state (:class:`~warp_drive.training.carried_state.CarriedState`) and records what the update
needs to run the sequences again; A2C/PPO/MAPPO policies take one (``model.type: gru``:
:class:`~warp_drive.training.models.gru.GRUActorCritic`, MLP encoder, GRU cell, heads; with ``critic_dims`` a
critic encoder and GRU of its own, the state holding both). A recurrent model's update takes minibatches of whole
env x agent sequences (``num_minibatches`` must divide ``E * A``) and refuses ``trainer.compile``.

Masked input (:mod:`warp_drive.training.agent_masks`): when a policy reads the env's ``action_mask`` or
``active`` arrays, ``obs`` is a flat mapping of the input (a tensor under the key ``"_input_"``, or a mapping's
own keys) and the masks (:mod:`.masked_input`); a model takes it when its class sets ``takes_agent_masks =
True`` (``fully_connected`` and ``gru`` do), splits it with ``split_masks`` and gives illegal actions probability exactly 0
(``mask_logits``). A policy reading masks with a model that does not take them is refused at build time.

A model's parts live here too, so models import no algorithm: the head outputs and their log-probabilities
(:mod:`.distributions`, ``HeadOutput``) and the observation normalizer (:mod:`.obs_normalizer`, ``ObsNormalizer``).
"""

from warp_drive.training.models.action_spec import (
    ActionSpec,
    ObsDims,
    action_heads_from_space,
    obs_dims_from_space,
)
from warp_drive.training.models.distributions import HeadOutput
from warp_drive.training.models.factory import ModelFactory
from warp_drive.training.models.fully_connected import FullyConnected
from warp_drive.training.models.obs_normalizer import ObsNormalizer

__all__ = [
    "ActionSpec",
    "FullyConnected",
    "HeadOutput",
    "ModelFactory",
    "ObsDims",
    "ObsNormalizer",
    "action_heads_from_space",
    "obs_dims_from_space",
]
