"""skrl's PPO (a third-party trainer from PyPI) on a warp_drive env, through the Gymnasium adapter.

Nothing here is specific to warp_drive except the first lines of :func:`make_env`: the env replicas
are a ``gymnasium.vector.VectorEnv`` (:class:`~warp_drive.interop.WarpDriveVectorEnv` with
``output="numpy"``), wrapped by Gymnasium's own ``RecordEpisodeStatistics`` (episode returns), then
by skrl's ``wrap_env(..., wrapper="gymnasium")``; skrl's ``PPO`` agent, ``RandomMemory`` and
``SequentialTrainer`` do the rest. skrl reads Gymnasium's autoreset the way the adapter does it
(the ended sub-env's returned observation is already its next episode's first one).

Needs ``pip install skrl`` (Python >= 3.10; in the ``dev`` extra). Usage::

    python examples/skrl_ppo.py --env cartpole --timesteps 20000
    python examples/skrl_ppo.py --env pendulum --timesteps 50000 --backend pycuda --num-envs 256
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from torch import nn

if __package__ in (None, ""):  # run as a script from a checkout: make warp_drive importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import example_envs  # noqa: E402,F401 - registers the example envs (by name) in warp_drive's env registrar
from warp_drive.interop import WarpDriveVectorEnv

try:
    from skrl.agents.torch.ppo import PPO, PPO_CFG
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import CategoricalMixin, DeterministicMixin, GaussianMixin, Model
    from skrl.trainers.torch import SequentialTrainer, SequentialTrainerCfg
except ImportError as err:  # pragma: no cover - depends on the install
    raise SystemExit(f"this example needs skrl >= 2.1: pip install 'skrl>=2.1' ({err})") from err


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="cartpole", help="a single-agent example env (cartpole, pendulum, ...)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "pycuda"], help="env backend")
    p.add_argument("--num-envs", type=int, default=16, help="env replicas")
    p.add_argument("--timesteps", type=int, default=20_000, help="steps of the vector env (each steps every replica)")
    p.add_argument("--rollouts", type=int, default=32, help="steps per replica between updates")
    p.add_argument("--episode-length", type=int, default=200, help="the env's time limit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch intra-op threads while training (the MLPs are tiny: 1 is fastest on a CPU)")
    p.add_argument("--log-dir", default="", help="write skrl's TensorBoard logs and checkpoints here (default: none)")
    p.add_argument("--quiet", action="store_true", help="no summary line")
    return p.parse_args(argv)


class Policy(CategoricalMixin, Model):
    """Logits of a Discrete action from a two-layer tanh MLP."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, device: Any) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.net = nn.Sequential(
            nn.Linear(self.num_observations, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, self.num_actions)
        )

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict]:
        return self.net(inputs["observations"]), {}


class GaussianPolicy(GaussianMixin, Model):
    """Mean of a Box action from a two-layer tanh MLP, and a learned state-independent log std."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, device: Any) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        GaussianMixin.__init__(self, clip_actions=True, clip_log_std=True, min_log_std=-5.0, max_log_std=1.0)
        self.net = nn.Sequential(
            nn.Linear(self.num_observations, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, self.num_actions)
        )
        self.log_std = nn.Parameter(torch.zeros(self.num_actions))

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict]:
        return self.net(inputs["observations"]), {"log_std": self.log_std}


class Value(DeterministicMixin, Model):
    """State value from a two-layer tanh MLP."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, device: Any) -> None:
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self)
        self.net = nn.Sequential(nn.Linear(self.num_observations, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))

    def compute(self, inputs: dict[str, Any], role: str = "") -> tuple[torch.Tensor, dict]:
        return self.net(inputs["observations"]), {}


def make_env(args: argparse.Namespace) -> tuple[RecordEpisodeStatistics, Any]:
    """(Gymnasium-wrapped vector env, skrl-wrapped env)."""
    envs = WarpDriveVectorEnv(
        args.env,
        num_envs=args.num_envs,
        env_config={"episode_length": args.episode_length, "seed": args.seed},
        backend=args.backend,
        output="numpy",  # what Gymnasium's vector wrappers and skrl's Gymnasium wrapper read
    )
    stats = RecordEpisodeStatistics(envs, buffer_length=1000)
    return stats, wrap_env(stats, wrapper="gymnasium")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train and return ``{"episodes", "returns", "first_returns", "last_returns", "seconds", ...}``."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    stats, env = make_env(args)
    device = env.device
    discrete = isinstance(env.action_space, spaces.Discrete)
    policy_cls = Policy if discrete else GaussianPolicy
    models = {
        "policy": policy_cls(env.observation_space, env.action_space, device),
        "value": Value(env.observation_space, env.action_space, device),
    }
    cfg = PPO_CFG(
        rollouts=args.rollouts,
        learning_epochs=4,
        mini_batches=4,
        learning_rate=args.lr,
        entropy_loss_scale=0.01 if discrete else 0.0,
        value_loss_scale=0.5,
    )
    cfg.experiment.directory = args.log_dir
    cfg.experiment.write_interval = "auto" if args.log_dir else 0
    cfg.experiment.checkpoint_interval = "auto" if args.log_dir else 0
    agent = PPO(
        models=models,
        memory=RandomMemory(memory_size=args.rollouts, num_envs=env.num_envs, device=device),
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=device,
        cfg=cfg,
    )
    trainer_cfg = SequentialTrainerCfg(
        timesteps=args.timesteps, headless=True, disable_progressbar=True, close_environment_at_exit=False
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(args.torch_threads)
    start = time.perf_counter()
    try:
        SequentialTrainer(env=env, agents=agent, cfg=trainer_cfg).train()
    finally:
        torch.set_num_threads(threads)
    seconds = time.perf_counter() - start
    returns = [float(r) for r in stats.return_queue]
    k = max(1, len(returns) // 5)
    result = {
        "env": args.env,
        "episodes": int(stats.episode_count),
        "returns": returns,
        "first_returns": float(np.mean(returns[:k])) if returns else math.nan,
        "last_returns": float(np.mean(returns[-k:])) if returns else math.nan,
        "env_steps": args.timesteps * env.num_envs,
        "seconds": seconds,
    }
    if not args.quiet:
        print(
            f"skrl PPO on warp_drive {args.env} ({args.backend}, {env.num_envs} envs): {result['episodes']} episodes, "
            f"mean return of the first fifth {result['first_returns']:.1f}, of the last fifth "
            f"{result['last_returns']:.1f}, {result['env_steps'] / seconds:,.0f} env steps/s"
        )
    env.close()
    return result


if __name__ == "__main__":
    main()
