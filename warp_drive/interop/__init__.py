"""Adapters to the standard RL APIs: PettingZoo (one replica) and Gymnasium vector envs (all replicas).

Classes are imported on first use, so ``import warp_drive.interop`` does not import pettingzoo::

    from warp_drive.interop import WarpDrivePettingZooEnv, WarpDriveVectorEnv

- :class:`~warp_drive.interop.pettingzoo_env.WarpDrivePettingZooEnv`: ``pettingzoo.ParallelEnv``
  over one replica (host copies; for tooling, tests and evaluation). Needs ``pettingzoo``.
- :class:`~warp_drive.interop.gymnasium_vector.WarpDriveVectorEnv`: ``gymnasium.vector.VectorEnv``
  over all replicas of a single-agent env (or every (env, agent) pair), on the data store's device.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "WarpDrivePettingZooEnv": "warp_drive.interop.pettingzoo_env",
    "WarpDriveVectorEnv": "warp_drive.interop.gymnasium_vector",
    "InteropError": "warp_drive.interop._common",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warp_drive.interop' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
