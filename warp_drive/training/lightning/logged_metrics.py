"""What a :class:`~warp_drive.training.lightning.module.WarpDriveModuleBase` logs, read from its engine.

At the last step of every epoch the module logs :func:`epoch_metrics` (learning rates, timesteps,
env steps per second) and, when the iterations so far span whole episodes, the statistics of the
episodes that ended since the last report (:func:`take_episode_sums`, :func:`episode_means`). The
functions here only compute; the module logs (``self.log_dict``) and reduces over ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from warp_drive.training.engine import Engine

Tensor = torch.Tensor


def epoch_metrics(engine: Engine, trained: Sequence[str], world_size: int) -> dict[str, float]:
    """Host values: every policy's timestep, the trained policies' learning rates, the iteration and
    the env and agent steps per second of all ``world_size`` ranks."""
    host: dict[str, float] = {}
    for tag, p in engine.policies.items():
        host[f"{tag}/timestep"] = float(p.timestep)
        if tag in trained:
            for suffix, lr in p.learning_rates().items():
                host[f"{tag}/lr{suffix}"] = float(lr)
    perf = engine.perf
    if perf.get("total"):
        rate = float(perf["steps"]) / float(perf["total"])
        host["perf/env_steps_per_s"] = world_size * rate
        host["perf/agent_steps_per_s"] = world_size * rate * engine.env_wrapper.n_agents
    host["perf/iteration"] = float(engine.iteration)
    return host


def take_episode_sums(engine: Engine) -> tuple[list[str], Tensor]:
    """The policy tags and, per policy, (return sum, length sum, count) of the episodes ended since
    the last call, as one ``[policies, 3]`` tensor (to reduce over ranks at once); zeroes the sums."""
    tags = list(engine.policies)
    sums = []
    for tag in tags:
        s = engine.policies[tag].stats
        sums.append(torch.stack([s.return_sum, s.length_sum, s.count]).reshape(3).float())
        s.pop()  # zero the sums for the next report
    return tags, torch.stack(sums)


def episode_means(tags: Sequence[str], sums: Tensor) -> dict[str, Tensor]:
    """``<tag>/episode_return_mean``, ``<tag>/episode_length_mean`` and ``<tag>/episodes`` from the
    sums of :func:`take_episode_sums`."""
    episode: dict[str, Tensor] = {}
    for tag, (ret, length, count) in zip(tags, sums.unbind(0)):
        episode[f"{tag}/episode_return_mean"] = ret / count
        episode[f"{tag}/episode_length_mean"] = length / count
        episode[f"{tag}/episodes"] = count
    return episode
