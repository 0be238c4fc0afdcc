"""Evaluation: roll out whole episodes with the current policies and report their returns."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from warp_drive.utils.constants import Constants


@torch.no_grad()
def evaluate(trainer: Any, deterministic: bool = True, num_episodes: int = 1) -> dict[str, dict[str, np.ndarray]]:
    """Run until every env finished ``num_episodes`` episodes (at most ``num_episodes * T`` steps).

    Greedy (argmax / Gaussian mean) actions when ``deterministic``, sampled otherwise. The envs
    are force-reset before and after, so training can continue from fresh episodes.
    """
    w, dm = trainer.env_wrapper, trainer.env_wrapper.cuda_data_manager
    E, T = w.n_envs, w.episode_length
    saved = trainer.deterministic
    trainer.deterministic = deterministic
    w.reset_all_envs()
    rollout = trainer.rollout
    returns = {tag: torch.zeros((num_episodes, E), device=trainer.device) for tag in trainer.policies}
    lengths = torch.zeros((num_episodes, E), device=trainer.device)
    running = {tag: torch.zeros((E, p.num_agents), device=trainer.device) for tag, p in trainer.policies.items()}
    running_len = torch.zeros(E, device=trainer.device)
    finished = torch.zeros(E, dtype=torch.long, device=trainer.device)
    rewards_all = dm.data_on_device_via_torch(Constants.REWARDS)
    envs = torch.arange(E, device=trainer.device)
    try:
        rollout.begin()
        for _ in range(num_episodes * T):
            rollout.sample(None)
            w.step_all_envs()
            done = dm.data_on_device_via_torch(Constants.DONE) > 0
            active = finished < num_episodes
            slot = finished.clamp(max=num_episodes - 1)
            record = done & active
            for tag, p in trainer.policies.items():
                running[tag] += p.select(rewards_all)
                mean = running[tag].mean(1)
                returns[tag][slot, envs] += torch.where(record, mean, 0.0)
                running[tag].mul_((~done).float()[:, None])
            running_len += 1
            lengths[slot, envs] += torch.where(record, running_len, 0.0)
            running_len.mul_((~done).float())
            finished += record.long()
            d, nxt = rollout.after_step(None)
            rollout.advance(d, nxt)
    finally:
        trainer.deterministic = saved
        w.reset_all_envs()
        for p in trainer.policies.values():
            p.stats.reset_running()
        trainer.started = True  # envs were just force-reset: training continues from fresh episodes
    done_mask = (torch.arange(num_episodes, device=trainer.device)[:, None] < finished[None, :]).cpu().numpy()
    out = {}
    for tag in trainer.policies:
        out[tag] = {"episode_return": returns[tag].cpu().numpy()[done_mask], "episode_length": lengths.cpu().numpy()[done_mask]}
    return out
