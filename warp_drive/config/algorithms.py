"""The algorithm registry: one table of every algorithm a ``policy.<tag>.algorithm`` may name.

Config validation and the training engine read this table and name no algorithm themselves. An
entry points, by ``"module:attribute"`` path (imported on first use, so this floor imports no
training code), at

* ``section``: the class that parses and checks the algorithm's ``policy.<tag>`` section
  (``Class.from_dict(section, prefix)`` -> a frozen config with ``to_dict()``, ``algorithm``,
  ``to_train``, ``num_minibatches``), and
* ``policy``: a :class:`~warp_drive.training.algorithms.base.Policy` subclass (its ``build(context)``
  classmethod builds the per-tag policy object the engine drives), or a builder ``build(context) ->
  policy`` (with a ``policy_class`` attribute to be checked at registration), and
* ``sampler_parser`` (optional): ``parse(params, prefix) -> {key: value}`` of the ``sampler.params``
  keys the entry reads (``sampler_params``; DDPG's Ornstein-Uhlenbeck noise), and
* ``trainer_parser`` (optional): the same for the ``trainer`` keys the entry reads (``trainer_params``;
  DDPG's ``n_step``): the generic ``trainer`` section neither declares nor parses them.

A config that sets such a ``trainer`` or ``sampler.params`` key with no policy whose entry reads it is
refused.

Adding an algorithm is one :func:`register_algorithm` call (the built-in ones are the lines of
:data:`BUILTIN`); it checks the entry against the policy contract
(:func:`warp_drive.training.algorithms.base.check_entry`, imported on first use like the entries).
Each algorithm's configuration lives in its folder, ``warp_drive/training/algorithms/<name>/config.py``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from warp_drive.utils import checks as chk
from warp_drive.errors import ConfigError


@dataclass(frozen=True)
class AlgorithmEntry:
    """One algorithm: its name, where its section parser and policy builder live, what it reads.

    Attributes:
        name: the ``algorithm`` value (upper case; configs match it case-insensitively).
        section: ``"module:Class"`` of the ``policy.<tag>`` section parser.
        policy: ``"module:function"`` building the policy object from a build context.
        sampler_params: ``sampler.params`` keys the algorithm reads besides ``use_argmax``.
        summary: one line for listings and error messages.
        sampler_parser: ``"module:function"`` parsing ``sampler_params`` (``parse(params, prefix)``).
        trainer_params: ``trainer`` keys the algorithm reads besides the generic section's (e.g. ``n_step``).
        trainer_parser: ``"module:function"`` parsing ``trainer_params`` (``parse(section, prefix)`` -> the
            keys the section sets to something other than their default).
    """

    name: str
    section: str
    policy: str
    sampler_params: tuple[str, ...] = ()
    summary: str = ""
    sampler_parser: str = ""
    trainer_params: tuple[str, ...] = ()
    trainer_parser: str = ""

    def section_class(self) -> Any:
        """The section parser class (imported on first use)."""
        return resolve(self.section)

    def resolve_policy(self) -> Any:
        """The object at ``policy``: a Policy subclass or a builder (imported on first use)."""
        return resolve(self.policy)

    def policy_builder(self) -> Any:
        """``build(context) -> policy``: the class's ``build`` when ``policy`` names a class."""
        target = self.resolve_policy()
        return target.build if isinstance(target, type) else target

    def parse_sampler_params(self, params: Any, prefix: str) -> dict[str, Any]:
        """The ``sampler.params`` this entry reads, parsed by its ``sampler_parser`` ({} without one)."""
        return resolve(self.sampler_parser)(params, prefix) if self.sampler_parser else {}

    def parse_trainer_params(self, section: Any, prefix: str) -> dict[str, Any]:
        """The ``trainer`` keys this entry reads, parsed by its ``trainer_parser`` ({} without one)."""
        return resolve(self.trainer_parser)(section, prefix) if self.trainer_parser else {}


def resolve(path: str) -> Any:
    """The object at ``"module:attribute"``."""
    module, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"algorithm registry entry {path!r} cannot be imported: {err}") from err


_ALG = "warp_drive.training.algorithms"
_AC = f"{_ALG}.actor_critic"
#: the check every registered entry passes (the policy contract of ``training/algorithms/base.py``)
CONTRACT_CHECK = f"{_ALG}.base:check_entry"

#: The algorithms that ship with the package.
BUILTIN: tuple[AlgorithmEntry, ...] = (
    AlgorithmEntry("A2C", f"{_AC}.config:ActorCriticConfig", f"{_AC}:build_a2c",
                   summary="advantage actor-critic (on-policy, one epoch)"),
    AlgorithmEntry("PPO", f"{_AC}.config:ActorCriticConfig", f"{_AC}:build_ppo",
                   summary="proximal policy optimization (on-policy, clipped ratio)"),
    AlgorithmEntry("MAPPO", f"{_ALG}.mappo.config:MAPPOConfig", f"{_ALG}.mappo:build_mappo",
                   summary="PPO with a centralized critic (critic_input, default all_obs) and value normalisation"),
    AlgorithmEntry("DDPG", f"{_ALG}.ddpg.config:DDPGPolicyConfig", f"{_ALG}.ddpg:build_policy",
                   sampler_params=("damping", "stddev", "scale"), sampler_parser=f"{_ALG}.ddpg.config:parse_ou_params",
                   trainer_params=("n_step",), trainer_parser=f"{_ALG}.ddpg.config:parse_trainer_params",
                   summary="deterministic actor, Q critic, target networks, n-step targets, Ornstein-Uhlenbeck "
                           "exploration (2.7.1's TrainerDDPG)"),
    AlgorithmEntry("SAC", "warp_drive.training.algorithms.sac.config:SACPolicyConfig", "warp_drive.training.algorithms.sac:build_policy",
                   summary="soft actor-critic: twin Q, squashed Gaussian, learned temperature, replay on the device"),
)

_REGISTRY: dict[str, AlgorithmEntry] = {e.name: e for e in BUILTIN}


def register_algorithm(entry: AlgorithmEntry, *, replace: bool = False) -> AlgorithmEntry:
    """Adds ``entry`` to the registry (``replace=True`` to override a name already there).

    Raises:
        ConfigError: the name is not upper case, is taken, or a path cannot be imported.
        PolicyContractError: the policy class misses a hook of the contract, or the section class
            has no ``from_dict`` (the message names what is missing and the fix).
    """
    name = entry.name.upper()
    if name != entry.name:
        raise ConfigError(f"algorithm name {entry.name!r} must be upper case ({name!r})")
    if name in _REGISTRY and not replace:
        raise ConfigError(f"algorithm {name!r} is already registered; pass replace=True to override it")
    resolve(CONTRACT_CHECK)(entry)
    _REGISTRY[name] = entry
    return entry


def sampler_param_entries() -> dict[str, AlgorithmEntry]:
    """``{sampler.params key: the entry that parses it}`` over every registered algorithm."""
    return {key: e for e in _REGISTRY.values() for key in e.sampler_params}


def trainer_param_entries() -> dict[str, list[AlgorithmEntry]]:
    """``{trainer key: the entries that read it}`` over every registered algorithm."""
    out: dict[str, list[AlgorithmEntry]] = {}
    for e in _REGISTRY.values():
        for key in e.trainer_params:
            out.setdefault(key, []).append(e)
    return out


def algorithm_names() -> tuple[str, ...]:
    """Every registered algorithm name, in registration order."""
    return tuple(_REGISTRY)


def algorithm_entry(name: Any, key: str = "algorithm") -> AlgorithmEntry:
    """The entry of ``name`` (any case).

    Raises:
        ConfigError: not a string, or no such algorithm (the message lists the registered ones).
    """
    text = chk.as_str(name, key)
    entry = _REGISTRY.get(text.upper())
    if entry is None:
        close = chk.closest_match(text.upper(), _REGISTRY)
        hint = f"; did you mean {close}?" if close else ""
        raise ConfigError(f"`{key}`={chk.brief(text)} is not supported; expected one of "
                          f"{', '.join(_REGISTRY)} (case-insensitive){hint}")
    return entry
