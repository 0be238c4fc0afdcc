"""What a policy's networks see: the rollout hook
:meth:`Policy.observe <warp_drive.training.algorithms.base.Policy.observe>`.

Every step the rollout asks each policy what its networks see; the answer is recorded in the policy's
rollout record and is what the update trains on. By default that is each agent's own observation. A
policy section may choose otherwise (``policy.<tag>.actor_input`` / ``critic_input``):

=================  ===========================================================================  ==============
value              what the network sees, per agent                                             size
=================  ===========================================================================  ==============
``local``          its own observation (the default, 2.7.1's)                                    F
``obs_agent_id``   its own observation, flattened, then a one-hot of its place in the policy     F + A
``all_obs``        every agent's observation of its env, concatenated in agent order            N F
``global_state``   the env's ``state`` array (declared in its data feed, ``(S,)`` per env)      S
=================  ===========================================================================  ==============

(F: one agent's observation size, A: the policy's agents, N: the env's agents.) ``all_obs`` and
``global_state`` are the same for every agent of an env. The actor may see ``local`` or ``obs_agent_id``;
the critic any of the four. When both see the same, the model gets one input (one network, a shared
trunk); otherwise it gets ``{"actor": ..., "critic": ...}`` (:data:`ACTOR`, :data:`CRITIC`) and has a
critic network of its own (the model contract: :mod:`warp_drive.training.models`).

The inputs are composed on the device from the data store with fixed-shape torch ops (a gather, a
reshape, an ``expand``, a ``cat``) and no host syncs, so the CUDA-graph rollout captures them; they are
stored whole in the record (``(B, E, A, size)`` per input), so the update, graphed or not, reads them like
observations. Recomputing ``all_obs`` from the stored observations would save memory only for a policy
of every agent, and ``global_state`` is not in them, so the record keeps what the networks saw.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.agent_masks import AgentMasks, build_agent_masks
from warp_drive.training.models.separate_critic import ACTOR, CRITIC
from warp_drive.utils import checks as chk
from warp_drive.vocab.constants import Constants

Tensor = torch.Tensor

LOCAL = "local"
OBS_AGENT_ID = "obs_agent_id"
ALL_OBS = "all_obs"
GLOBAL_STATE = "global_state"
#: ``policy.<tag>.critic_input`` values, each with what it means (for messages and docs)
CRITIC_INPUTS: dict[str, str] = {
    LOCAL: "the agent's own observation",
    OBS_AGENT_ID: "the agent's own observation and a one-hot of its place in the policy",
    ALL_OBS: "every agent's observation of its env, concatenated",
    GLOBAL_STATE: "the env's `state` array (declared in its data feed)",
}
#: ``policy.<tag>.actor_input`` values: the actor sees only what its agent may see when acting
ACTOR_INPUTS = (LOCAL, OBS_AGENT_ID)
#: the data store array ``global_state`` reads: ``(E, *S)`` float32, per env
STATE = Constants.STATE


def parse_input(value: Any, key: str, allowed: tuple[str, ...] | list[str]) -> str:
    """``value`` checked against ``allowed``.

    Raises:
        ConfigError: naming the value, the allowed ones and the closest.
    """
    return chk.as_choice(value, key, allowed)


def own_observations(dm: Any, policy: Any, obs_names: list[str], at_reset: bool = False) -> Any:
    """The policy's agents' own observations ``(E, A, *obs)`` from the placeholders (a dict for Dict obs).

    Placeholders laid out ``(E, *features, N)`` (``obs_agents_last``) are seen agent-first (a view).
    """
    suffix = Constants.AT_RESET_SUFFIX if at_reset else ""

    def view(name: str) -> Tensor:
        x = dm.data_on_device_via_torch(name + suffix)
        return policy.select(x.movedim(-1, 1) if policy.obs_agents_last else x)

    if obs_names == [Constants.OBSERVATIONS]:
        return view(Constants.OBSERVATIONS)
    prefix = Constants.OBSERVATIONS + "_"
    return {n[len(prefix):]: view(n) for n in obs_names}


class NetworkInputs:
    """One policy's choice of what its actor and critic see, and how to compose it (module docstring).

    Args:
        actor, critic: values of :data:`ACTOR_INPUTS` / :data:`CRITIC_INPUTS`.
        num_policy_agents: A, the policy's agents (the one-hot's width).
        device: where the one-hot lives.
        masks: the env's action masks and active flags the policy reads, added to what its networks see
            (:mod:`warp_drive.training.agent_masks`), or None.
    """

    def __init__(self, actor: str, critic: str, num_policy_agents: int, device: torch.device | str,
                 masks: AgentMasks | None = None) -> None:
        self.actor, self.critic = actor, critic
        self.agent_id = torch.eye(num_policy_agents, dtype=torch.float32, device=device)
        self.masks = masks

    @property
    def separate(self) -> bool:
        """The critic sees something else than the actor: two networks, inputs ``{"actor", "critic"}``."""
        return self.actor != self.critic

    def as_dict(self) -> dict[str, str]:
        """``{"actor": ..., "critic": ...}`` (what a checkpoint records)."""
        return {ACTOR: self.actor, CRITIC: self.critic}

    @property
    def store_names(self) -> tuple[str, ...]:
        """Data store arrays read besides the observation placeholders."""
        masks = () if self.masks is None else self.masks.store_names
        return ((STATE,) if GLOBAL_STATE in (self.actor, self.critic) else ()) + masks

    def dims(self, obs_shape: tuple[int, ...], num_env_agents: int, state_shape: tuple[int, ...] | None
             ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """``(actor dims, critic dims)`` for the model (critic None when not :attr:`separate`);
        ``obs_shape``: one agent's observation; ``state_shape``: the env's ``state`` per env."""
        size = {LOCAL: None, OBS_AGENT_ID: math.prod(obs_shape) + self.agent_id.shape[0],
                ALL_OBS: num_env_agents * math.prod(obs_shape),
                GLOBAL_STATE: None if state_shape is None else math.prod(state_shape)}
        shape = lambda mode: obs_shape if mode == LOCAL else (size[mode],)  # noqa: E731
        return shape(self.actor), shape(self.critic) if self.separate else None

    def compose(self, own: Tensor, dm: Any, at_reset: bool, obs_agents_last: bool) -> Any:
        """What the networks see, from the agents' own observations ``own`` ``(E, A, *obs)`` and the data
        store ``dm``: one tensor, or ``{"actor": ..., "critic": ...}`` when :attr:`separate`; with :attr:`masks`,
        that with the agents' masks (a masked input, :mod:`warp_drive.training.models.masked_input`)."""
        seen = self._input(self.actor, own, dm, at_reset, obs_agents_last)
        if self.separate:
            seen = {ACTOR: seen, CRITIC: self._input(self.critic, own, dm, at_reset, obs_agents_last)}
        return seen if self.masks is None else self.masks.compose(seen, dm, at_reset)

    def _input(self, mode: str, own: Tensor, dm: Any, at_reset: bool, obs_agents_last: bool) -> Tensor:
        if mode == LOCAL:
            return own
        E, A = own.shape[:2]
        if mode == OBS_AGENT_ID:
            return torch.cat((own.reshape(E, A, -1), self.agent_id.to(own.dtype).expand(E, A, A)), dim=-1)
        suffix = Constants.AT_RESET_SUFFIX if at_reset else ""
        if mode == ALL_OBS:
            x = dm.data_on_device_via_torch(Constants.OBSERVATIONS + suffix)
            x = x.movedim(-1, 1) if obs_agents_last else x
        else:
            x = dm.data_on_device_via_torch(STATE + suffix)
        x = x.reshape(E, 1, -1).to(own.dtype)
        return x.expand(E, A, x.shape[-1])


def build_network_inputs(config: Any, ctx: Any) -> NetworkInputs | None:
    """The :class:`NetworkInputs` of a policy section (``actor_input`` / ``critic_input``, and the masks of
    ``action_mask`` / ``mask_inactive``: :func:`~warp_drive.training.agent_masks.build_agent_masks`; None when
    both inputs are ``local`` and no mask is read), checked against the env of build context ``ctx``.

    Raises:
        ConfigError: Dict observations with a non-local input, or ``global_state`` where the env
            declares no ``state`` array with an env axis; a mask the env cannot give.
    """
    actor, critic = getattr(config, "actor_input", LOCAL), getattr(config, "critic_input", LOCAL)
    masks = build_agent_masks(config, ctx)
    if actor == critic == LOCAL:
        return None if masks is None else NetworkInputs(actor, critic, len(ctx.agent_ids), ctx.device, masks)
    where = f"policy.{ctx.tag}"
    if ctx.obs_names != [Constants.OBSERVATIONS]:
        raise ConfigError(f"`{where}.critic_input`={critic} / `actor_input`={actor}: inputs other than `local` "
                          f"take one Box observation per agent; this env has Dict observations ({ctx.obs_names}). "
                          "Use `local`, or concatenate the keys into one `observations` array in the env.")
    inputs = NetworkInputs(actor, critic, len(ctx.agent_ids), ctx.device, masks)
    if STATE in inputs.store_names:
        dm = ctx.data_manager
        if not dm.is_data_on_device(STATE) or dm.get_shape(STATE)[0] != ctx.num_envs:
            raise ConfigError(f"`{where}.critic_input`=global_state reads the env's `{STATE}` array, but "
                              f"{type(ctx.env).__name__} declares none with an env axis: add "
                              f"`feed.add_data('{STATE}', array, save_copy_and_apply_at_reset=True)` to its "
                              "get_data_dictionary() (and write it in its step), or use `critic_input: all_obs`.")
    return inputs


def state_shape(dm: Any) -> tuple[int, ...] | None:
    """The env's ``state`` shape per env, or None when it declares none."""
    return tuple(dm.get_shape(STATE)[1:]) if dm.is_data_on_device(STATE) else None
