"""Action masks and agents that leave the game, for A2C / PPO / MAPPO policies.

An env may declare two optional per-agent arrays in its data feed (names in
:class:`~warp_drive.vocab.constants.Constants`; the env contract is in ``docs/adding_an_env.md``):

* ``action_mask`` (``Constants.ACTION_MASK``), ``(N, L)`` per env: nonzero where an action is legal, the
  categorical heads' actions concatenated (L at least the policy's sum of head sizes; a policy reads the first
  that many columns);
* ``active`` (``Constants.ACTIVE``), ``(N,)`` per env: nonzero while the agent is in the game, 0 once it left
  (died, finished).

Both are written by the env's step like any other array and restored from their saved copies at a reset
(``save_copy_and_apply_at_reset=True``). A policy reads them with ``policy.<tag>.action_mask`` and
``policy.<tag>.mask_inactive`` (``auto``: when the env declares the array; ``on``: required; ``off``: ignored).

**Action masks.** What the policy's networks see every step carries its agents' masks (a masked input,
:mod:`warp_drive.training.models.masked_input`): the model sets the illegal actions' logits to the dtype's
minimum before the softmax, so the probabilities the sampler (the CUDA kernel and the cpu backend's twin) reads
are exactly 0 there and it never draws them; argmax never picks them. The mask is recorded with the input, so
the update's log-probabilities and entropies are those of the same masked distribution.

**Agents that leave the game.** The input also carries the active flags of the step. A sample (step t, env,
agent) counts only where the agent was active when it acted: every loss term, the advantage standardization,
the return, reward and observation normalizers' statistics and every update metric are means over those samples
(``sum(mask * term) / max(sum(mask), 1)``, :mod:`warp_drive.training.algorithms.sample_mask`), not zeros that
dilute the mean.

*The return rule.* An agent's trajectory ends at the step in which it leaves: where it was active before step
t and is inactive after it (before the env's reset), step t is a **termination** for that agent: its return is
its rewards up to and including step t, and nothing is bootstrapped past it (not ``V(s_{t+1})``, not a
time-limit truncation's final value: the termination wins). Rewards the env gives an agent while it is inactive
are credited to no action. An agent that comes back later (a respawn) starts a new trajectory. Samples of
inactive steps get advantages and returns too (the GAE scan runs over every step) but count nowhere.

Everything here runs with fixed shapes and no host syncs, inside the CUDA-graph rollout and update; policies of
envs without these arrays (or with ``off``) run exactly the code they ran before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.models.action_spec import action_heads_from_space
from warp_drive.training.models.masked_input import active_of, with_masks
from warp_drive.utils import checks as chk
from warp_drive.vocab.constants import Constants

logger = logging.getLogger(__name__)

Tensor = torch.Tensor

AUTO, ON, OFF = "auto", "on", "off"
#: ``policy.<tag>.action_mask`` / ``mask_inactive`` values
SETTINGS = (AUTO, ON, OFF)


def parse_setting(value: Any, key: str) -> str:
    """``value`` of ``policy.<tag>.action_mask`` / ``mask_inactive`` checked: ``auto``, ``on`` or ``off``
    (YAML's ``true`` / ``false`` read as ``on`` / ``off``).

    Raises:
        ConfigError: naming the value, the allowed ones and the closest.
    """
    if isinstance(value, bool):
        return ON if value else OFF
    return chk.as_choice(value, key, SETTINGS)


@dataclass(frozen=True)
class AgentMasks:
    """The masks one policy reads, and how it reads them.

    Attributes:
        num_logits: L, the policy's sum of categorical head sizes, when it reads the env's ``action_mask``;
            None when it does not.
        active: it reads the env's ``active`` flags.
        agent_index: ``(A,)`` long, its agents (None: all agents in order, no gather).
    """

    num_logits: int | None
    active: bool
    agent_index: Tensor | None

    @property
    def store_names(self) -> tuple[str, ...]:
        """The data store arrays read (per env)."""
        return ((Constants.ACTION_MASK,) if self.num_logits is not None else ()) + (
            (Constants.ACTIVE,) if self.active else ())

    def describe(self) -> str:
        parts = ([f"action_mask ({self.num_logits} logits)"] if self.num_logits is not None else []) + (
            ["active"] if self.active else [])
        return " and ".join(parts)

    def compose(self, inputs: Any, dm: Any, at_reset: bool = False) -> Any:
        """``inputs`` (what the networks see, ``(E, A, ...)``) with the masks of the data store ``dm`` (the
        saved reset copies with ``at_reset``): a masked input. Fixed-shape ops, no host sync."""
        suffix = Constants.AT_RESET_SUFFIX if at_reset else ""
        mask = active = None
        if self.num_logits is not None:
            mask = self._select(dm.data_on_device_via_torch(Constants.ACTION_MASK + suffix))[..., : self.num_logits] != 0
        if self.active:
            active = self._select(dm.data_on_device_via_torch(Constants.ACTIVE + suffix)) != 0
        return with_masks(inputs, mask, active)

    def _select(self, x: Tensor) -> Tensor:
        return x if self.agent_index is None else x.index_select(1, self.agent_index)


def build_agent_masks(config: Any, ctx: Any) -> AgentMasks | None:
    """The :class:`AgentMasks` of a policy section (``action_mask``, ``mask_inactive``) on the env of build
    context ``ctx``; None when it reads neither array.

    Raises:
        ConfigError: ``on`` for an array the env does not declare; an array of another shape than ``(E, N, L)``
            / ``(E, N)`` or without a saved reset copy; an action mask for continuous (Box) actions with ``on``,
            or next to a Dict observation's own ``action_mask`` key.
    """
    where = f"policy.{ctx.tag}"
    action_setting = getattr(config, "action_mask", AUTO)
    active_setting = getattr(config, "mask_inactive", AUTO)
    dm = ctx.data_manager
    num_logits = None
    if _wanted(dm, Constants.ACTION_MASK, action_setting, f"{where}.action_mask", ctx):
        spec = action_heads_from_space(ctx.action_space())
        if spec.is_gaussian:
            if action_setting == ON:
                raise ConfigError(f"`{where}.action_mask: on`, but the policy's actions are continuous (Box): masks "
                                  "are for categorical (Discrete, MultiDiscrete) heads. Set it to auto or off.")
            logger.debug("%s: continuous actions; the env's action_mask is not read", where)
        elif f"{Constants.OBSERVATIONS}_{Constants.ACTION_MASK}" in ctx.obs_names:
            raise ConfigError(f"{type(ctx.env).__name__} declares an `{Constants.ACTION_MASK}` array and a Dict "
                              f"observation key `{Constants.ACTION_MASK}`: two masks. Keep one, or set "
                              f"`{where}.action_mask: off` (the observation's key still masks).")
        else:
            num_logits = spec.num_logits
            _check_array(dm, Constants.ACTION_MASK, ctx, f"(E, N, L) with L >= {num_logits}", num_logits)
    active = _wanted(dm, Constants.ACTIVE, active_setting, f"{where}.mask_inactive", ctx)
    if active:
        _check_array(dm, Constants.ACTIVE, ctx, "(E, N)", None)
    if num_logits is None and not active:
        return None
    masks = AgentMasks(num_logits, active, None if ctx.contiguous else torch.as_tensor(
        list(ctx.agent_ids), dtype=torch.long, device=ctx.device))
    logger.debug("%s reads the env's %s", where, masks.describe())
    return masks


def _wanted(dm: Any, name: str, setting: str, key: str, ctx: Any) -> bool:
    """Whether the policy reads array ``name`` (``setting`` of config key ``key``)."""
    if setting == OFF:
        return False
    if dm.is_data_on_device(name):
        return True
    if setting == ON:
        raise ConfigError(f"`{key}: on`, but {type(ctx.env).__name__} declares no `{name}` array: add "
                          f"`feed.add_data('{name}', array, save_copy_and_apply_at_reset=True)` to its "
                          "get_data_dictionary() and write it in its step (docs/adding_an_env.md), or set "
                          f"`{key}: auto`.")
    return False


def _check_array(dm: Any, name: str, ctx: Any, expected: str, num_logits: int | None) -> None:
    """Array ``name`` is per agent with an env axis (and at least ``num_logits`` columns) and has a saved copy."""
    shape = tuple(dm.get_shape(name))
    E, N = ctx.num_envs, ctx.num_agents
    ok = shape[:2] == (E, N) and (len(shape) == 2 if num_logits is None else len(shape) == 3 and shape[2] >= num_logits)
    if not ok:
        raise ConfigError(f"policy '{ctx.tag}': the env's `{name}` array has shape {shape} on the store; expected "
                          f"{expected} (E={E} envs, N={N} agents): declare it per agent for one env, "
                          f"{'(N,)' if num_logits is None else '(N, L)'}, with save_copy_and_apply_at_reset=True.")
    if name not in dm.reset_data_list:
        raise ConfigError(f"policy '{ctx.tag}': the env's `{name}` array has no saved copy to restore at a reset: "
                          f"declare it with `feed.add_data('{name}', array, save_copy_and_apply_at_reset=True)`.")


def check_model_takes_masks(model: Any, masks: AgentMasks | None, where: str) -> None:
    """A policy that reads masks needs a model whose forward reads a masked input (``takes_agent_masks``).

    Raises:
        ConfigError: naming the model and both fixes.
    """
    if masks is None:
        return
    module = getattr(model, "module", model)
    if not getattr(module, "takes_agent_masks", False):
        raise ConfigError(f"{where}: the env's {masks.describe()} reach the model as a masked input, but "
                          f"{type(module).__name__} does not take one: set `takes_agent_masks = True` on the model "
                          "class and read its input with warp_drive.training.models.masked_input.split_masks, or "
                          f"set `{where}.action_mask: off` / `{where}.mask_inactive: off`.")


def agent_ends(terminated: Tensor, active: Tensor, active_after: Tensor) -> Tensor:
    """Per agent, where its trajectory ended at a step: the env's termination, or the agent left in that step
    (active before it, inactive after it, before any reset): the return rule of the module docstring.

    Shapes:
        terminated: (B, E) (or (B, E, A)); active, active_after: (B, E, A) bool; output: (B, E, A) bool.
    """
    ended = terminated if terminated.dim() == active.dim() else terminated.unsqueeze(-1)
    return (ended > 0) | (active & ~active_after)


def trajectory_flags(buffers: Any, masks: AgentMasks | None) -> tuple[Tensor, Tensor | None]:
    """``(terminated, sample mask)`` of a finished rollout record for GAE: the env's termination flags and
    None without active flags; else the agents' own ends (:func:`agent_ends`) and the active flags ``(B, E, A)``."""
    if masks is None or not masks.active:
        return buffers.terminated, None
    active = active_of(buffers.obs)
    return agent_ends(buffers.terminated, active, buffers.active_after), active
