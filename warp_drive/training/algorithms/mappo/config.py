"""The ``policy.<tag>`` section of a MAPPO policy (:class:`MAPPOConfig`): PPO's keys, MAPPO's defaults.

MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") is PPO
with a centralized value function and value normalisation. A MAPPO section takes every key of an A2C/PPO
section (``defaults.yaml``'s ``policy``); where it leaves one out, :data:`MAPPO_DEFAULTS` fill it before
``defaults.yaml`` does:

* ``critic_input: all_obs``: the critic sees every agent's observation of its env (the paper's
  "concatenation of local observations"; ``global_state`` reads an env-declared ``state`` array instead,
  :mod:`warp_drive.training.network_inputs`);
* ``normalize_return: true``: the value head learns returns standardized by running statistics
  (:class:`~warp_drive.training.algorithms.normalization.ValueNormalizer`, the paper's PopArt-free value
  normalisation);
* ``num_epochs`` 4 when null, and ``gae_lambda`` 0.95 (PPO's usual).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from warp_drive.training.algorithms.actor_critic.config import ActorCriticConfig
from warp_drive.utils import checks as chk

#: the keys a MAPPO section defaults differently from ``defaults.yaml``'s ``policy``
MAPPO_DEFAULTS: dict[str, Any] = {"critic_input": "all_obs", "normalize_return": True, "gae_lambda": 0.95}


class MAPPOConfig(ActorCriticConfig):
    """One MAPPO ``policy.<tag>`` section: :class:`ActorCriticConfig`'s fields, MAPPO's defaults."""

    #: ``num_epochs`` when the section leaves it null
    NUM_EPOCHS: ClassVar[int] = 4

    @classmethod
    def default_num_epochs(cls, algorithm: str) -> int:
        return cls.NUM_EPOCHS

    @classmethod
    def clips_ratio(cls, algorithm: str) -> bool:
        return True

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "policy") -> Any:
        """Parses a MAPPO section: :data:`MAPPO_DEFAULTS` under the keys it sets, then
        :meth:`ActorCriticConfig.from_dict` (every check and message of A2C/PPO's sections)."""
        given = dict(chk.require_mapping(section, prefix))
        return super().from_dict({**MAPPO_DEFAULTS, **given}, prefix)
