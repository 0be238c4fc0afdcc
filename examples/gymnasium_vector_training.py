"""PPO on CartPole in plain PyTorch, through warp_drive's Gymnasium vector adapter.

The env replicas step on the data store's device (``--backend pycuda``: the GPU; ``cpu``: NumPy
reference steps); observations, rewards and done flags arrive as torch tensors on that device, so
the whole loop below runs there without host copies (one host sync per iteration, for printing).

The adapter resets ended episodes in the same step (Gymnasium's SAME_STEP autoreset): the returned
observation of an ended sub-env is already the next episode's first observation, and the final
observation is in ``infos["final_obs"]``. Truncated episodes (the 500-step time limit) are
bootstrapped with V(final observation); terminated ones are not.

Usage::

    python examples/gymnasium_vector_training.py --backend cpu --steps 200000
    python examples/gymnasium_vector_training.py --backend pycuda --num-envs 1024 --steps 5000000
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.distributions import Categorical

if __package__ in (None, ""):  # run as a script from a checkout: make warp_drive importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import example_envs  # noqa: E402,F401 - registers the example envs (by name) in warp_drive's env registrar
from warp_drive.interop import WarpDriveVectorEnv


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cpu", choices=["cpu", "pycuda"], help="env backend")
    p.add_argument("--steps", type=int, default=200_000, help="total env steps (all sub-envs)")
    p.add_argument("--num-envs", type=int, default=64, help="env replicas")
    p.add_argument("--rollout", type=int, default=128, help="steps per sub-env per iteration")
    p.add_argument("--episode-length", type=int, default=500, help="CartPole time limit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=2.5e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip", type=float, default=0.2, help="PPO ratio clip")
    p.add_argument("--epochs", type=int, default=4, help="PPO epochs per iteration")
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--entropy-coef", type=float, default=0.01)
    p.add_argument("--value-coef", type=float, default=0.5)
    p.add_argument("--quiet", action="store_true", help="no per-iteration lines")
    return p.parse_args(argv)


class ActorCritic(nn.Module):
    """Separate two-layer tanh MLPs for the policy logits and the value."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int = 64) -> None:
        super().__init__()

        def mlp(out: int, gain: float) -> nn.Sequential:
            layers = [nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, out)]
            for layer in layers:
                if isinstance(layer, nn.Linear):
                    nn.init.orthogonal_(layer.weight, math.sqrt(2))
                    nn.init.zeros_(layer.bias)
            nn.init.orthogonal_(layers[-1].weight, gain)
            return nn.Sequential(*layers)

        self.policy = mlp(num_actions, 0.01)
        self.value = mlp(1, 1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy(obs), self.value(obs).squeeze(-1)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train and return ``{"mean_episode_return", "returns", "episodes", "env_steps", ...}``."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    envs = WarpDriveVectorEnv(
        "cartpole",
        num_envs=args.num_envs,
        env_config={"episode_length": args.episode_length, "reset_pool_size": 1000, "seed": args.seed},
        backend=args.backend,
    )
    device, E, T = envs.device, envs.num_envs, args.rollout
    obs_dim = int(envs.single_observation_space.shape[0])
    agent = ActorCritic(obs_dim, int(envs.single_action_space.n)).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    obs_buf = torch.zeros((T, E, obs_dim), device=device)
    act_buf = torch.zeros((T, E), dtype=torch.long, device=device)
    logp_buf = torch.zeros((T, E), device=device)
    val_buf = torch.zeros((T, E), device=device)
    rew_buf = torch.zeros((T, E), device=device)
    done_buf = torch.zeros((T, E), device=device)
    episode_return = torch.zeros(E, device=device)

    obs, _ = envs.reset(seed=args.seed)
    iterations = max(1, args.steps // (E * T))
    history: list[float] = []
    episodes = 0
    start = time.perf_counter()
    for it in range(iterations):
        finished_sum = torch.zeros((), device=device)
        finished_count = torch.zeros((), device=device)
        for t in range(T):
            obs_buf[t] = obs  # obs is a live view of the data store: copy it into the buffer
            with torch.no_grad():
                logits, value = agent(obs)
                dist = Categorical(logits=logits)
                action = dist.sample()
            obs, reward, terminated, truncated, infos = envs.step(action)
            done = terminated | truncated
            with torch.no_grad():  # time-limit truncation: bootstrap from V(final observation)
                final_value = agent.value(infos["final_obs"]).squeeze(-1)
            act_buf[t], logp_buf[t], val_buf[t] = action, dist.log_prob(action), value
            rew_buf[t] = reward + args.gamma * final_value * truncated
            done_buf[t] = done.float()
            episode_return += reward
            finished_sum += (episode_return * done).sum()
            finished_count += done.sum()
            episode_return *= ~done

        with torch.no_grad():  # GAE(lambda); an ended step does not bootstrap from the next obs
            next_value = agent(obs)[1]
            advantages = torch.zeros_like(rew_buf)
            gae = torch.zeros(E, device=device)
            for t in reversed(range(T)):
                nonterminal = 1.0 - done_buf[t]
                delta = rew_buf[t] + args.gamma * next_value * nonterminal - val_buf[t]
                gae = delta + args.gamma * args.gae_lambda * nonterminal * gae
                advantages[t] = gae
                next_value = val_buf[t]
            returns = advantages + val_buf

        b_obs, b_act, b_logp = obs_buf.reshape(-1, obs_dim), act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = advantages.reshape(-1), returns.reshape(-1)
        batch = b_obs.shape[0]
        mb = max(1, batch // args.minibatches)
        for _ in range(args.epochs):
            perm = torch.randperm(batch, device=device)
            for s in range(0, batch, mb):
                idx = perm[s : s + mb]
                logits, value = agent(b_obs[idx])
                dist = Categorical(logits=logits)
                ratio = torch.exp(dist.log_prob(b_act[idx]) - b_logp[idx])
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8) if adv.numel() > 1 else adv
                policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - args.clip, 1 + args.clip) * adv).mean()
                value_loss = 0.5 * (value - b_ret[idx]).pow(2).mean()
                loss = policy_loss + args.value_coef * value_loss - args.entropy_coef * dist.entropy().mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()

        count = int(finished_count.item())  # the one host sync per iteration
        episodes += count
        if count:
            history.append(float(finished_sum.item()) / count)
        if not args.quiet:
            shown = f"{history[-1]:8.2f}" if count else "     n/a"
            print(
                f"iter {it + 1:4d}/{iterations}  env steps {(it + 1) * E * T:9d}  "
                f"mean episode return {shown}  episodes {count:5d}  "
                f"{(it + 1) * E * T / (time.perf_counter() - start):9.0f} steps/s"
            )
    envs.close()
    result = {
        "mean_episode_return": history[-1] if history else float("nan"),
        "returns": history,
        "episodes": episodes,
        "env_steps": iterations * E * T,
        "iterations": iterations,
        "final_loss": float(loss.item()),
    }
    print(f"final mean episode return {result['mean_episode_return']:.2f} over {episodes} episodes ({args.backend})")
    return result


if __name__ == "__main__":
    main()
