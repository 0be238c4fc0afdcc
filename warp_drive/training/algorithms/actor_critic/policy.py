"""A2C and PPO policies: one actor-critic model whose heads the sampler kernels sample.

The registry entries are :class:`ActorCritic` builders, one per loss (``ActorCritic(A2C)``,
``ActorCritic(PPO)``: :mod:`warp_drive.training.algorithms.actor_critic`).

The sampler kernels sample the model's head outputs (``samples_in_kernel``); :meth:`ActorCriticPolicy.finalize`
computes advantages and returns (GAE, return normalizer); :meth:`ActorCriticPolicy.update` runs
``num_epochs x num_minibatches`` gradient steps of the A2C or PPO loss
(:func:`~warp_drive.training.algorithms.actor_critic.update.update_policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from warp_drive.vocab.constants import Constants
from warp_drive.training.algorithms.actor_critic.a2c import A2C
from warp_drive.training.agent_masks import check_model_takes_masks, trajectory_flags
from warp_drive.errors import CheckpointError
from warp_drive.training.algorithms.base import BuildContext, Policy, UpdateContext
from warp_drive.training.algorithms.compiled import LossFunction
from warp_drive.training.algorithms.actor_critic.graphed_update import GraphedUpdate, match_device_form, portable_optimizer_state
from warp_drive.training.algorithms.actor_critic.update import update_policy
from warp_drive.training.distributed import unwrap
from warp_drive.training.models.action_spec import ActionSpec, action_heads_from_space, obs_dims_from_space
from warp_drive.training.buffers import RolloutBatch, RolloutBuffers
from warp_drive.training.carried_state import CarriedState, build_carried_state, episode_starts
from warp_drive.training.network_inputs import NetworkInputs, build_network_inputs, state_shape
from warp_drive.training.policy_state import EpisodeStats
from warp_drive.training.utils.param_scheduler import ParamScheduler, set_optimizer_lr

Tensor = torch.Tensor
#: the name of the policy's one optimizer (:meth:`ActorCriticPolicy.optimizers`)
OPTIMIZER = "policy"


@dataclass
class ActorCriticPolicy(Policy):
    """Everything the engine keeps for one A2C or PPO policy tag."""

    samples_in_kernel: ClassVar[bool] = True
    captures_in_cuda_graph: ClassVar[bool] = True
    batch_has_env_axis: ClassVar[bool] = True

    tag: str
    agent_ids: list[int]
    agent_index: Tensor  # (A,) long, on the device
    contiguous_all: bool  # covers agents 0..N-1 in order: no gather/scatter needed
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    algorithm: A2C
    action_spec: ActionSpec
    action_name: str
    config: Any
    to_train: bool
    lr_schedule: Any = None  # ParamScheduler of the learning rate, evaluated at `timestep`
    timestep: int = 0
    buffers: RolloutBuffers | None = None
    stats: EpisodeStats | None = None
    train_model: torch.nn.Module | None = None  # the model used for gradient steps (DDP-wrapped if distributed)
    obs_agents_last: bool = False  # observation placeholders are (E, *features, N) (2.7.1's "last")
    graphed: GraphedUpdate | None = None  # the captured minibatch step, once an update replays one
    loss_fn: LossFunction | None = None  # the update's forward + loss (compiled with trainer.compile)
    inputs: NetworkInputs | None = None  # what the networks see besides the own observations (actor_input, critic_input)
    carried: CarriedState | None = None  # a recurrent model's hidden state per env and agent (carried_state.py)

    def finalize(self, last_values: Any, bootstrap: bool) -> None:
        """Advantages and returns of the rollout (without bootstrapping nothing is truncated, so no
        bootstrap values are read); an agent that left the game ends its trajectory there
        (:mod:`warp_drive.training.agent_masks`)."""
        b = self.buffers
        terminated, active = trajectory_flags(b, None if self.inputs is None else self.inputs.masks)
        adv, ret = self.algorithm.compute_advantages(b.rewards, b.values, last_values, terminated,
                                                     b.truncated if bootstrap else None,
                                                     b.next_values if bootstrap else None,
                                                     **({} if active is None else {"sample_mask": active}))
        b.advantages.copy_(adv)
        b.returns.copy_(ret)
        if self.carried is not None:
            episode_starts(b.terminated, b.truncated, b.episode_starts)

    def batch(self) -> RolloutBatch:
        """Shapes: obs ``(B, E, A, *obs)`` (or a dict of those); actions (B, E, A, columns);
        advantages, returns, old_log_probs, old_values (B, E, A)."""
        return self.buffers.batch()

    def update(self, batch: RolloutBatch, context: UpdateContext) -> dict[str, Tensor]:
        pc = self.config
        max_norm = pc.max_grad_norm if pc.clip_grad_norm else None
        optimizer = context.optimizer(self.optimizer, OPTIMIZER)
        match_device_form(self.optimizer)  # on CUDA the captured step's Adam arithmetic, graphed or not
        set_optimizer_lr(self.optimizer, self.lr_schedule.get_param_value(self.timestep))
        loss_fn = self._loss_function(context)
        chunk_rows = self._chunk_rows(context)
        if self._graphable(batch, context, chunk_rows):
            if self.graphed is None:
                self.graphed = GraphedUpdate(self.model, self.optimizer, self.algorithm, batch,
                                             num_minibatches=pc.num_minibatches, max_grad_norm=max_norm,
                                             autocast_dtype=context.autocast_dtype, loss_fn=loss_fn)
            return self.graphed.run(timestep=self.timestep, num_epochs=pc.num_epochs, generator=context.generator)
        hook = context.clip_gradients
        clip = None if hook is None else (lambda o=optimizer, m=max_norm: hook(o, m))
        return update_policy(
            self.train_model, optimizer, self.algorithm, batch, timestep=self.timestep,
            num_epochs=pc.num_epochs, num_minibatches=pc.num_minibatches, max_grad_norm=max_norm,
            generator=context.generator, backward=context.backward, clip_gradients=clip,
            track_grad_norm=context.track_grad_norm, chunk_rows=chunk_rows,
            autocast_dtype=context.autocast_dtype, loss_fn=loss_fn)

    def _loss_function(self, context: UpdateContext) -> LossFunction:
        """The update's forward + loss for this context's model, precision and compile flag (built once)."""
        fn = self.loss_fn
        if (fn is None or fn.model is not self.train_model or fn.dtype != context.autocast_dtype
                or fn.requested != context.compile):
            fn = self.loss_fn = LossFunction(self.train_model, self.algorithm, context.autocast_dtype, context.compile)
        return fn

    def _chunk_rows(self, context: UpdateContext) -> int | None:
        """The update's chunk (``context.chunk_rows``, (time, env) rows of A agent-samples each) in this policy's
        minibatch rows: the same, or for a recurrent policy whole env x agent sequences of B agent-samples each."""
        chunk = context.chunk_rows
        if self.carried is None or chunk is None:
            return chunk
        return max(1, chunk * self.num_agents // self.buffers.advantages.shape[0])

    def _graphable(self, batch: RolloutBatch, context: UpdateContext, chunk_rows: int | None) -> bool:
        """Whether this update replays a captured step (:mod:`.graphed_update`). A minibatch must fit twice in
        ``chunk_rows`` (the memory budget): the capture's warm-up and the graph's own pool each hold its activations."""
        b = self.buffers
        B, E, A = b.advantages.shape
        rows = (E * A if self.carried is not None else B * E) // self.config.num_minibatches
        return (context.cuda_graph and b.advantages.is_cuda and isinstance(batch, RolloutBatch)
                and batch.advantages is b.advantages and batch.obs is b.obs
                and context.optimizers is None and context.backward is None and context.clip_gradients is None
                and self.train_model is self.model and (chunk_rows is None or chunk_rows >= 2 * rows))

    def running_statistics(self) -> list[Any]:
        return list(self.algorithm.running_statistics())

    def use_local_gradients(self) -> None:
        self.train_model = self.model

    def optimizers(self) -> dict[str, Any]:
        return {OPTIMIZER: self.optimizer}

    def state_dict(self) -> dict[str, Any]:
        """``{model, optimizer, algorithm, timestep, agent_ids, network_inputs}``, and ``recurrent: True`` for a
        recurrent model (its carried states are the engine's, per rank)."""
        state = {"model": unwrap(self.model).state_dict(), "optimizer": portable_optimizer_state(self.optimizer.state_dict()),
                 "algorithm": self.algorithm.state_dict(), "timestep": self.timestep, "agent_ids": self.agent_ids,
                 "network_inputs": self.network_input_names()}
        if self.carried is not None:
            state["recurrent"] = True
        return state

    def network_input_names(self) -> dict[str, str]:
        """``{"actor": actor_input, "critic": critic_input}`` of this policy."""
        return {"actor": "local", "critic": "local"} if self.inputs is None else self.inputs.as_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Raises :class:`~warp_drive.errors.CheckpointError` when the checkpoint's networks saw other inputs
        (``actor_input`` / ``critic_input``) or its weights have other shapes."""
        saved = dict(state.get("network_inputs") or {"actor": "local", "critic": "local"})
        if saved != self.network_input_names():
            raise CheckpointError(
                f"policy '{self.tag}': the checkpoint was trained with actor_input={saved.get('actor')}, critic_input="
                f"{saved.get('critic')}; this run has actor_input={self.network_input_names()['actor']}, critic_input="
                f"{self.network_input_names()['critic']}. Set `policy.{self.tag}.actor_input` / `critic_input` to the "
                "checkpoint's values, or start from fresh weights.")
        recurrent = bool(state.get("recurrent", False))
        if recurrent != (self.carried is not None):
            saved_kind, own_kind = ("a recurrent", "an MLP") if recurrent else ("an MLP", "a recurrent")
            raise CheckpointError(
                f"policy '{self.tag}': the checkpoint holds {saved_kind} model (one that carries a hidden state from "
                f"step to step is recurrent, e.g. model.type gru); this run's model.type={self.config.model.type} is "
                f"{own_kind} model. Set `policy.{self.tag}.model.type` (and its fc_dims and kwargs) to the "
                "checkpoint's, or start from fresh weights.")
        own = {k: tuple(v.shape) for k, v in unwrap(self.model).state_dict().items()}
        shapes = {k: tuple(v.shape) for k, v in state["model"].items()}
        differ = [k for k in own if own[k] != shapes.get(k)] + [k for k in shapes if k not in own]
        if differ:
            k = differ[0]
            raise CheckpointError(
                f"policy '{self.tag}': the checkpoint's weight {k!r} has shape {shapes.get(k, 'none')}, the model "
                f"{own.get(k, 'none')} ({len(differ)} weights differ): the network's input or layer sizes differ from the "
                "checkpoint's (the env's observation or state size, or model.fc_dims). Use the checkpoint's settings, "
                "or start from fresh weights.")
        unwrap(self.model).load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.graphed = None  # new optimizer state tensors: the next update captures its step again
        self.algorithm.load_state_dict(state["algorithm"])
        self.timestep = int(state["timestep"])


class ActorCritic:
    """The builder of an actor-critic algorithm with loss class ``loss`` (:class:`A2C` or a subclass,
    e.g. PPO): what a registry entry's ``policy`` path names (``ActorCritic(PPO)(ctx)`` -> a policy)."""

    policy_class = ActorCriticPolicy

    def __init__(self, loss: type[A2C]) -> None:
        self.loss = loss

    def __call__(self, ctx: BuildContext) -> ActorCriticPolicy:
        return build_policy(ctx, self.loss)

    def __repr__(self) -> str:
        return f"ActorCritic({self.loss.__name__})"


def build_policy(ctx: BuildContext, loss: type[A2C]) -> ActorCriticPolicy:
    """An actor-critic policy: its model (``policy.<tag>.model``), Adam, the loss ``loss`` (the class its
    registry entry's :class:`ActorCritic` builder holds: the one place an algorithm name meets its loss), its buffers.

    Policies over a subset of the agents sample into an action placeholder of their own,
    ``actions_<tag>`` (copied into the joint one by the sampler launch).
    """
    dm, pc = ctx.data_manager, ctx.config
    action_spec = action_heads_from_space(ctx.action_space())
    obs_dims, critic_dims, inputs = obs_dims_from_space(ctx.observation_space()), None, build_network_inputs(pc, ctx)
    if inputs is not None:
        obs_dims, critic_dims = inputs.dims(obs_dims, ctx.num_agents, state_shape(dm))
    model = ctx.model_factory.build(pc.model, obs_dims, action_spec, f"policy.{ctx.tag}.model",
                                    critic_dims=critic_dims).to(ctx.device)
    check_model_takes_masks(model, None if inputs is None else inputs.masks, f"policy.{ctx.tag}")
    action_name = Constants.ACTIONS
    if not ctx.contiguous:
        action_name = f"{Constants.ACTIONS}_{ctx.tag}"
        E, _, heads = dm.get_shape(Constants.ACTIONS)
        dtype = np.dtype(dm.get_dtype(Constants.ACTIONS))
        dm.push_data_to_device({action_name: np.zeros((E, len(ctx.agent_ids), heads), dtype)}, torch_accessible=True)
    ctx.sampler.register_actions(dm, action_name, max(action_spec.categorical or (1,)), is_deterministic=action_spec.is_gaussian)
    lr = ParamScheduler(pc.lr, "lr")
    policy = ActorCriticPolicy(
        **Policy.common_state(ctx), model=model, optimizer=torch.optim.Adam(model.parameters(), lr=lr.get_param_value(0)),
        algorithm=loss.from_config(pc).to(ctx.device), action_spec=action_spec, action_name=action_name, lr_schedule=lr,
        inputs=inputs, carried=build_carried_state(model, ctx))
    policy.train_model = ctx.wrap_model(model)  # DDP across ranks; rollouts use `model`
    example = ctx.observe(policy)
    columns = dm.get_shape(action_name)[2]
    action_dtype = dm.data_on_device_via_torch(action_name).dtype
    state = None if policy.carried is None else policy.carried.hidden
    policy.buffers = RolloutBuffers.allocate(ctx.steps_per_iter, example, len(ctx.agent_ids), columns, action_dtype, state)
    if inputs is not None and inputs.masks is not None and inputs.masks.active:  # the agents' ends (agent_masks.py)
        policy.buffers.active_after = torch.zeros_like(policy.buffers.rewards, dtype=torch.bool)
    return policy
