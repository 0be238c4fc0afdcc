"""The algorithm seam: what the engine, the rollout and every driver ask of one policy.

An algorithm is a registry entry (:mod:`warp_drive.config.algorithms`) whose builder turns a
:class:`BuildContext` into a :class:`Policy`: one object per policy tag holding its agents, its
networks and optimizers, its rollout buffers and its algorithm state. The engine and the rollout
drive every policy through the hooks below and never ask which algorithm it is.

Per iteration, for every policy ``p``::

    obs = p.observe(store, obs_names)         # what its networks see (network_inputs.py), recorded
    outputs = p.model(obs)                    # no grad, every env at once (the rollout, each step)
                                              # recurrent: p.model(obs, state), p.carried (carried_state.py)
    p.act(outputs, greedy) -> (E, A, d)       # unless p.samples_in_kernel: the sampler kernels do it
    p.record_next_obs(step, obs)              # if p.records_next_obs: after the env step, before resets
    p.finalize(last_values, bootstrap)        # once, after the rollout copied rewards and flags
    p.update(p.batch(), context)              # trained policies: gradient steps -> {name: 0-d tensor}

and for checkpoints ``p.state_dict()`` / ``p.load_state_dict(state)`` (the entry under
``policies.<tag>`` of the engine's checkpoint) and ``p.weight_files()`` (2.7.1's
``<tag>[_<role>]_<timestep>.state_dict`` files).

Hooks marked *on-policy* have defaults that suit policies that keep no state between rollouts.

The rollout's two hooks are named here: **what a network sees** (:meth:`Policy.observe`,
:mod:`warp_drive.training.network_inputs`) and **carried state** (:attr:`Policy.carried`, a
:class:`~warp_drive.training.carried_state.CarriedState` for a recurrent model: the rollout feeds the model its
state, keeps the next one and resets it where an env is done; None for a stateless model).

The contract is checked: :func:`check_policy_class` when an algorithm is registered
(:func:`warp_drive.config.algorithms.register_algorithm`), :func:`check_policy` when the engine
builds a policy; both raise :class:`~warp_drive.errors.PolicyContractError` naming what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from warp_drive.errors import ConfigError, PolicyContractError
from warp_drive.training.distributed import unwrap
from warp_drive.training.carried_state import CarriedState
from warp_drive.training.network_inputs import NetworkInputs, own_observations
from warp_drive.training.policy_state import EpisodeStats, agent_index

Tensor = torch.Tensor


@dataclass(frozen=True)
class BuildContext:
    """What a policy builder may read of the run (a read-only view, built by the engine).

    Attributes:
        tag: the policy tag; agent_ids: its agents (env order of its batch rows).
        config: the policy's parsed ``policy.<tag>`` section; run_config: the whole run config.
        env: the env (its ``action_space`` / ``observation_space`` per agent).
        data_manager: the env's data store; sampler: the engine's action sampler.
        obs_names: the observation placeholders the policy reads.
        steps_per_iter: env steps per env per iteration (the rows of the rollout buffers).
        num_envs, num_agents: the env wrapper's sizes (all agents, every policy).
        device: where everything lives; generator: the engine's torch generator on it.
        model_factory: where model types are looked up.
        obs_agents_last: observation placeholders are ``(E, *features, N)``.
        wrap_model: ``wrap_model(module)`` -> the module that takes gradient steps (DDP across ranks).
        observe: ``observe(policy)`` -> what the policy's networks see now (:meth:`Policy.observe`):
            what its buffers' rows hold (needs the policy's agent fields and ``inputs`` set).
    """

    tag: str
    agent_ids: list[int]
    config: Any
    run_config: Any
    env: Any
    data_manager: Any
    sampler: Any
    obs_names: list[str]
    steps_per_iter: int
    num_envs: int
    num_agents: int
    device: torch.device
    generator: torch.Generator
    model_factory: Any
    obs_agents_last: bool
    wrap_model: Callable[[nn.Module], nn.Module]
    observe: Callable[[Any], Any]

    def action_space(self) -> Any:
        """The action space of the policy's agents (one kind for all of them).

        Raises:
            ConfigError: the agents have different action spaces.
        """
        spaces = self.env.action_space
        kinds = {type(spaces[a]).__name__ + str(getattr(spaces[a], "shape", "")) for a in self.agent_ids}
        if len(kinds) > 1:
            raise ConfigError(f"policy '{self.tag}' mixes agents with different action spaces: {sorted(kinds)}")
        return spaces[self.agent_ids[0]]

    def observation_space(self) -> Any:
        return self.env.observation_space[self.agent_ids[0]]

    @property
    def contiguous(self) -> bool:
        """The policy covers agents 0..N-1 in order (no gather or scatter)."""
        return self.agent_ids == list(range(self.num_agents))


@dataclass
class UpdateContext:
    """What :meth:`Policy.update` may use besides its own state (built per update by the engine).

    Attributes:
        generator: minibatch shuffles (seeded by the run).
        env_steps: env steps of the rollout just collected (all envs).
        optimizers: ``{name: optimizer}`` to step instead of the policy's own (a driver's wrappers,
            e.g. Lightning's), or None.
        backward: replaces ``loss.backward()`` (e.g. Lightning's ``manual_backward``), or None.
        clip_gradients: ``clip_gradients(optimizer, max_norm or None)`` replaces the clipping.
        track_grad_norm: report ``grad_norm`` when ``clip_gradients`` is given.
        chunk_rows: rows ((time, env) samples) per forward + backward chunk, or None (whole).
        autocast_dtype: autocast dtype of the forward and backward (``trainer.update_precision``).
        cuda_graph: a policy may capture its minibatch step in a CUDA graph and replay it
            (``trainer.use_cuda_graph`` on a CUDA device).
        compile: a policy may compile its forward + loss with ``torch.compile`` (``trainer.compile``;
            :mod:`~warp_drive.training.algorithms.compiled`).
    """

    generator: torch.Generator
    env_steps: int
    optimizers: Mapping[str, Any] | None = None
    backward: Callable[[Tensor], None] | None = None
    clip_gradients: Callable[[Any, "float | None"], None] | None = None
    track_grad_norm: bool = True
    chunk_rows: int | None = None
    autocast_dtype: torch.dtype | None = None
    cuda_graph: bool = False
    compile: bool = False

    def optimizer(self, own: Any, name: str) -> Any:
        """The optimizer to step for the policy's optimizer ``name`` (``own`` unless a driver's)."""
        return own if self.optimizers is None else self.optimizers[name]

    def backward_of(self, loss: Tensor) -> None:
        (self.backward or Tensor.backward)(loss)


class Policy:
    """The per-tag object the engine drives (see the module docstring for the order of calls).

    ``Policy.__init__(self, ctx)`` sets the state every policy shares (:data:`COMMON_FIELDS`, built by
    :meth:`common_state`, which a dataclass subclass passes to its own ``__init__``); a subclass calls
    it, then sets its own (:data:`OWN_FIELDS`: ``model``, ``action_spec``, ``action_name``, ``buffers``). A registry entry may name the class itself: :meth:`build` is then
    its builder. In full, a policy holds: ``tag``, ``agent_ids``, ``agent_index`` ((A,) long on
    the device), ``contiguous_all``, ``config``, ``to_train``, ``timestep``, ``model`` (the
    module that acts: its outputs on ``(E, A, *obs)`` observations are what :meth:`act` reads; for a
    policy the kernels sample, ``(head outputs, values)``), ``action_spec``,
    ``action_name`` (the placeholder its actions go to), ``buffers`` (its time-first record
    with at least ``obs``, ``actions``, ``rewards``, ``terminated`` and ``truncated``; on-policy:
    :class:`~warp_drive.training.buffers.RolloutBuffers`), ``stats`` (:class:`~warp_drive.training.policy_state.EpisodeStats`),
    ``lr_schedule`` and ``obs_agents_last``.
    """

    #: the sampler kernels sample this policy's actions from its head outputs (categorical
    #: probabilities or a Gaussian's mean and std), recording log-probabilities and values;
    #: False: :meth:`act` gives the actions.
    samples_in_kernel: ClassVar[bool] = False
    #: :meth:`record_next_obs` is called after every env step, before done envs are reset.
    records_next_obs: ClassVar[bool] = False
    #: the policy's acting may be captured in a CUDA graph and replayed (no host-side values that
    #: change between rollouts, no generator a capture cannot follow); else the rollout runs eagerly.
    captures_in_cuda_graph: ClassVar[bool] = False
    #: :meth:`batch`'s tensors have the env axis second, so a driver may train on a subset of envs.
    batch_has_env_axis: ClassVar[bool] = False

    tag: str
    agent_ids: list[int]
    agent_index: Tensor
    contiguous_all: bool
    config: Any
    to_train: bool
    timestep: int
    model: nn.Module
    obs_agents_last: bool
    #: what the networks see besides each agent's own observation (``policy.<tag>.actor_input`` /
    #: ``critic_input``, :func:`~warp_drive.training.network_inputs.build_network_inputs`); None: only that
    inputs: NetworkInputs | None = None
    #: a recurrent model's hidden state per env and agent, which the rollout feeds it and carries from step to
    #: step (:func:`~warp_drive.training.carried_state.build_carried_state`); None: the model keeps no state
    carried: CarriedState | None = None

    def __init__(self, ctx: BuildContext) -> None:
        for name, value in self.common_state(ctx).items():
            setattr(self, name, value)

    @staticmethod
    def common_state(ctx: BuildContext) -> dict[str, Any]:
        """The :data:`COMMON_FIELDS` of a policy built from ``ctx``, by name: what ``Policy.__init__`` sets,
        and what a dataclass policy (its own generated ``__init__``) takes as keywords,
        ``MyPolicy(**Policy.common_state(ctx), model=..., ...)``."""
        return {"tag": ctx.tag, "agent_ids": list(ctx.agent_ids), "agent_index": agent_index(ctx.agent_ids, ctx.device),
                "contiguous_all": ctx.contiguous, "config": ctx.config,
                "to_train": bool(getattr(ctx.config, "to_train", True)), "timestep": 0,
                "obs_agents_last": ctx.obs_agents_last, "stats": EpisodeStats.create(ctx.num_envs, len(ctx.agent_ids), ctx.device)}

    @classmethod
    def build(cls, ctx: BuildContext) -> Policy:
        """The builder when a registry entry names the class: ``cls(ctx)``."""
        return cls(ctx)

    @property
    def num_agents(self) -> int:
        return len(self.agent_ids)

    def select(self, x: Tensor) -> Tensor:
        """This policy's agents of an (E, N, ...) tensor (a view when it covers all agents in order)."""
        return x if self.contiguous_all else x.index_select(1, self.agent_index)

    # ------------------------------------------------------------------ acting
    def observe(self, dm: Any, obs_names: list[str], at_reset: bool = False) -> Any:
        """The hook "what a network sees": the networks' input for every env now, ``(E, A, ...)``, read from
        the data store ``dm`` (the placeholders ``obs_names``, their reset copies with ``at_reset``).

        Default: the agents' own observations (a dict for Dict observations), or, with :attr:`inputs`,
        what :meth:`NetworkInputs.compose <warp_drive.training.network_inputs.NetworkInputs.compose>`
        builds from them (one tensor, or ``{"actor": ..., "critic": ...}``). The rollout records it and runs
        the model on it; it must use fixed-shape torch ops and no host syncs (the CUDA-graph rollout
        captures it).
        """
        own = own_observations(dm, self, obs_names, at_reset)
        return own if self.inputs is None else self.inputs.compose(own, dm, at_reset, self.obs_agents_last)

    def act(self, outputs: Any, greedy: bool) -> Tensor:
        """Actions (E, A, columns) from the model's outputs on the current observations; ``greedy``: no exploration."""
        raise NotImplementedError(f"{type(self).__name__} samples in the kernel; the rollout calls act() "
                                  "only for policies with samples_in_kernel False")

    def record_next_obs(self, step: int, obs: Any) -> None:
        """The observations right after env step ``step`` (before resets); see :attr:`records_next_obs`."""

    # ------------------------------------------------------------------ learning
    def finalize(self, last_values: Any, bootstrap: bool) -> None:
        """After a rollout (rewards, actions, done flags in the buffers): targets, replay pushes.

        ``last_values``: the model's values for the observations after the last step
        (None for policies without one); ``bootstrap``: time-limit truncations bootstrap.
        """

    def batch(self) -> Mapping[str, Any]:
        """What :meth:`update` trains on after this rollout (on-policy:
        :class:`~warp_drive.training.buffers.RolloutBatch`)."""
        return {}

    def update(self, batch: Mapping[str, Any], context: UpdateContext) -> dict[str, Tensor]:
        """Gradient steps on ``batch``; returns metrics as 0-d device tensors (no host sync)."""
        raise NotImplementedError

    def running_statistics(self) -> list[Any]:
        """Normalizers whose statistics are averaged over ranks before an update (on-policy)."""
        return []

    def use_local_gradients(self) -> None:
        """Train the networks themselves, not their DistributedDataParallel wrappers (a driver such
        as Lightning's DDP strategy all-reduces the gradients itself)."""

    def optimizers(self) -> dict[str, Any]:
        """``{name: optimizer}`` of the trained networks (what a driver such as Lightning wraps)."""
        return {}

    def learning_rates(self) -> dict[str, float]:
        """``{metric suffix: lr}`` at the current timestep (``""`` -> ``<tag>/lr``)."""
        schedule = getattr(self, "lr_schedule", None)
        return {} if schedule is None else {"": schedule.get_param_value(self.timestep)}

    # ------------------------------------------------------------------ state and files
    def state_dict(self) -> dict[str, Any]:
        """The policy's entry of a checkpoint: plain data (tensors, numbers, containers)."""
        raise NotImplementedError

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def weight_files(self) -> dict[str, nn.Module]:
        """``{role: module}`` of 2.7.1's weight files: role ``""`` -> ``<tag>_<timestep>.state_dict``,
        ``"actor"`` -> ``<tag>_actor_<timestep>.state_dict``."""
        return {"": self.model}

    def load_weights(self, role: str, state: Mapping[str, Tensor]) -> None:
        """Loads a weight file of :meth:`weight_files`'s ``role`` (targets follow their networks).

        Raises:
            RuntimeError: the weights do not fit (torch's message).
        """
        module = self.weight_files()[role]
        unwrap(module).load_state_dict(state)


#: what ``Policy.__init__(ctx)`` sets; OWN_FIELDS: what a subclass sets (the rollout and engine read them all)
COMMON_FIELDS = ("tag", "agent_ids", "agent_index", "contiguous_all", "config", "to_train", "timestep",
                 "obs_agents_last", "stats")
OWN_FIELDS = ("model", "action_spec", "action_name", "buffers")
#: hooks the base leaves to a subclass: always, and when the sampler kernels do not sample (act)
REQUIRED_HOOKS = ("update", "state_dict", "load_state_dict")
_FIX = ("subclass warp_drive.training.algorithms.Policy, call Policy.__init__(self, ctx) and set the fields in your "
        "constructor, and implement the hooks (see warp_drive/training/algorithms/base.py)")


def missing_hooks(cls: type) -> tuple[str, ...]:
    """The hooks of :data:`REQUIRED_HOOKS` (and ``act`` unless ``samples_in_kernel``) ``cls`` leaves to the base."""
    need = REQUIRED_HOOKS + (() if getattr(cls, "samples_in_kernel", False) else ("act",))
    return tuple(name for name in need
                 if not callable(getattr(cls, name, None)) or getattr(cls, name) is getattr(Policy, name, None))


def check_policy_class(cls: Any, algorithm: str) -> None:
    """Raises :class:`PolicyContractError` unless ``cls`` is a :class:`Policy` subclass with every required hook."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise PolicyContractError(f"algorithm {algorithm!r}: its policy {cls!r} is not a subclass of "
                                  f"warp_drive.training.algorithms.Policy; {_FIX}.", ("Policy",))
    missing = missing_hooks(cls)
    if missing:
        raise PolicyContractError(f"algorithm {algorithm!r}: policy class {cls.__qualname__} does not implement "
                                  f"{', '.join(missing)}; {_FIX}.", missing)


def policy_class_of(builder: Any) -> type | None:
    """The policy class behind a registry entry's ``policy`` object: the class itself, or a builder's
    ``policy_class`` attribute (None for a plain function: it is checked when it builds)."""
    if isinstance(builder, type):
        return builder
    return getattr(builder, "policy_class", None)


def check_entry(entry: Any) -> None:
    """The check :func:`~warp_drive.config.algorithms.register_algorithm` runs: the section class parses
    (``from_dict``) and the policy object is a builder whose policy class meets the contract.

    Raises:
        PolicyContractError: naming what is missing and the fix.
    """
    section = entry.section_class()
    if not callable(getattr(section, "from_dict", None)):
        raise PolicyContractError(f"algorithm {entry.name!r}: section class {entry.section!r} has no "
                                  "from_dict(section, prefix) classmethod returning a frozen config with "
                                  "to_dict(), algorithm, to_train and num_minibatches", ("from_dict",))
    builder = entry.resolve_policy()
    if not callable(builder):
        raise PolicyContractError(f"algorithm {entry.name!r}: {entry.policy!r} is neither a Policy subclass nor a "
                                  "builder function build(ctx) -> Policy", ("build",))
    cls = policy_class_of(builder)
    if cls is not None:
        check_policy_class(cls, entry.name)


def check_policy(policy: Any, algorithm: str) -> Any:
    """Returns the built ``policy`` after checking it is a :class:`Policy` with every field set.

    Raises:
        PolicyContractError: naming the fields it lacks and the fix.
    """
    check_policy_class(type(policy), algorithm)
    missing = tuple(name for name in COMMON_FIELDS + OWN_FIELDS if getattr(policy, name, None) is None)
    if missing:
        raise PolicyContractError(f"algorithm {algorithm!r}: the policy of tag {getattr(policy, 'tag', '?')!r} "
                                  f"does not set {', '.join(missing)}; {_FIX}.", missing)
    return policy
