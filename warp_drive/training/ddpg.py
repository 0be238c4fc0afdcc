"""DDPG is not implemented here: what 2.7.1's DDPG names resolve to.

2.7.1 trained its continuous-action examples (``single_continuous_mountain_car``,
``single_pendulum``) with ``TrainerDDPG``. This project trains Box actions with a Gaussian policy
and A2C or PPO instead (see the bundled run configs of those envs). A run config asking for DDPG
fails when it is loaded (:class:`~warp_drive.errors.ConfigError` from the config schema), and so
does constructing :class:`TrainerDDPG`. The target-network helpers are generic and work.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging in place: ``target <- (1 - tau) * target + tau * source``."""
    if not 0.0 <= float(tau) <= 1.0:
        raise ConfigError(f"tau={tau} must lie in [0, 1] (the share of the source weights)")
    for t, s in zip(target.parameters(), source.parameters()):
        t.lerp_(s, float(tau))


@torch.no_grad()
def hard_update(target: nn.Module, source: nn.Module) -> None:
    """Copies the source's parameters into the target in place."""
    for t, s in zip(target.parameters(), source.parameters()):
        t.copy_(s)


class TrainerDDPG:
    """2.7.1's DDPG trainer: not available; constructing it raises :class:`ConfigError`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            "TrainerDDPG: DDPG is not implemented here. Train continuous (Box) actions with "
            "warp_drive.training.trainer.Trainer and `algorithm: PPO` (or A2C), a Gaussian policy; the "
            "run configs single_continuous_mountain_car.yaml and single_pendulum.yaml in "
            "warp_drive/training/run_configs do that.")
