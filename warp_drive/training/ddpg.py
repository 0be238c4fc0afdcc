"""WarpDrive 2.7.1's ``TrainerDDPG``: the :class:`~warp_drive.training.trainer.Trainer` with DDPG's names.

DDPG itself is an algorithm like A2C and PPO (:mod:`warp_drive.training.algorithms.ddpg`, registry
name ``DDPG``): any ``Trainer`` trains DDPG policies, beside A2C/PPO ones if a config mixes them,
with the same loop, checkpoints, signals and metrics. This class keeps 2.7.1's surface for code
written against it: the network dictionaries (``actor_models``, ``critic_models``,
``target_actor_models``, ``target_critic_models``), the OU sample parameters of
``evaluate_episodes`` and the checkpoints ``TrainerDDPG`` wrote before DDPG joined the one loop
(format ``"ddpg-1"``), which still load.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from warp_drive.errors import ConfigError
from warp_drive.training.algorithms.ddpg import hard_update, soft_update  # noqa: F401  (2.7.1's names)
from warp_drive.training.checkpoint_check import DDPG_LEGACY, check_contents
from warp_drive.training.checkpoint_files import safe_load
from warp_drive.training.trainer import Trainer

logger = logging.getLogger(__name__)

#: the format tag of the checkpoints TrainerDDPG wrote before DDPG joined the one training loop
LEGACY_FORMAT = DDPG_LEGACY
#: ``evaluate_episodes`` keywords of a DDPG trainer (2.7.1's OU parameters and ``use_argmax``)
SAMPLE_PARAMS = ("damping", "stddev", "scale", "use_argmax")


def trainer_class_for(config: Any) -> type:
    """:class:`TrainerDDPG` for a run config whose policies all use DDPG (2.7.1's split), else ``Trainer``."""
    return TrainerDDPG if all(p.algorithm == "DDPG" for p in config.policy.values()) else Trainer


class TrainerDDPG(Trainer):
    """Trains DDPG policies (2.7.1's ``TrainerDDPG``; same constructor arguments and methods).

    Args: those of :class:`~warp_drive.training.trainer.Trainer`; every policy has ``algorithm: DDPG``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        not_ddpg = [tag for tag, p in self.config.policy.items() if p.algorithm != "DDPG"]
        if not_ddpg:
            raise ConfigError(f"policies {not_ddpg} are not DDPG ({self.config.policy[not_ddpg[0]].algorithm}); "
                              "train them with warp_drive.training.trainer.Trainer (it trains every algorithm)")

    # ------------------------------------------------------------------ 2.7.1's names
    def _networks(self, role: str) -> dict[str, nn.Module]:
        return {tag: getattr(p.nets, role) for tag, p in self.policies.items()}

    actor_models = property(lambda self: self._networks("actor"), doc="``{tag: actor}``")
    critic_models = property(lambda self: self._networks("critic"), doc="``{tag: critic}``")
    target_actor_models = property(lambda self: self._networks("target_actor"), doc="``{tag: target actor}``")
    target_critic_models = property(lambda self: self._networks("target_critic"), doc="``{tag: target critic}``")

    def evaluate_episodes(self, **sample_params: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """2.7.1's evaluator: one episode per env; ``scale=0`` (or ``use_argmax=True``) plays ``mu(s)``,
        anything else the exploring actor. Returns ``({tag: (E, A_p) returns}, {tag: (E,) lengths})``."""
        unknown = set(sample_params) - set(SAMPLE_PARAMS)
        if unknown:
            raise ConfigError(f"unknown sample parameter(s) {sorted(unknown)}; DDPG takes {', '.join(SAMPLE_PARAMS)}")
        if {"damping", "stddev"} & set(sample_params):
            raise ConfigError("evaluate_episodes plays the policies' own OU noise schedules; set "
                              "sampler.params.damping / stddev in the run config instead of passing them here")
        greedy = bool(sample_params.get("use_argmax")) or sample_params.get("scale") == 0
        return super().evaluate_episodes(use_argmax=greedy)

    # ------------------------------------------------------------------ TrainerDDPG's old checkpoints
    def load_checkpoint(self, path: str | Path, state: Mapping[str, Any] | None = None) -> Path:
        """Restore a checkpoint: the trainer's own, or a :data:`LEGACY_FORMAT` one (networks, optimizers, OU
        states, counters, shuffle generator, env replicas)."""
        path = Path(path)
        if state is None and path.is_file():
            state = safe_load(path, map_location=self.device)
        if not (isinstance(state, Mapping) and state.get("format") == LEGACY_FORMAT):
            return super().load_checkpoint(path, state)
        check_contents(state, path)
        if set(state["policies"]) != set(self.policies):
            raise ConfigError(f"checkpoint policies {sorted(state['policies'])} differ from the trainer's {sorted(self.policies)}")
        new = self.engine.state_dict()  # this run's random streams, with the old checkpoint's parts put in
        new.update(iteration=state["iteration"], seed=state["seed"], perf=state["perf"])
        new["rng"]["generator"] = torch.as_tensor(state["generator"]).cpu()
        rank_state = new["rank_state"]
        rank_state.update(data_store=state["data_store"], env_resetter=state["env_resetter"], started=state["started"])
        for tag, p in self.policies.items():
            old = state["policies"][tag]
            nets = dict(old["nets"])
            new["policies"][tag] = {"model": nets.pop("actor"), "nets": nets, "algorithm": {"ou": old["ou"]},
                                    "timestep": old["timestep"], "agent_ids": p.agent_ids}
            rank_state["episode_carry"][tag] = list(old["episode_carry"])
        self.engine.load_state_dict(new, source=f"checkpoint {str(path)!r}")
        logger.debug("resumed from %s (a %s checkpoint) at iteration %d", path, LEGACY_FORMAT, self.iteration)
        return path
