"""A peer side by side (issue 17 item 3): VMAS 1.5.2's ``simple_tag`` against this project's Tag continuous.

Same GPU, same process, matched numbers of envs, taggers and runners. Two measurements per config:

1. **Simulator alone**, random actions. VMAS: ``simple_tag`` (``num_adversaries`` = our taggers,
   ``num_good_agents`` = our runners, ``num_landmarks=0``: our Tag has no obstacles), discrete actions
   drawn with ``torch.randint`` each step, ``max_steps`` = our episode length (every env ends together,
   then one batched ``reset()``). Ours: the path ``bench_env_step.py`` times: both action heads
   sampled in-kernel from uniform probabilities, ``step_all_envs()``, ``reset_only_done_envs()``,
   launched eagerly (no CUDA graph, unlike the graphed figure of ``bench_env_step.py``).
2. **End-to-end PPO training**. VMAS: the compact PPO loop below (one fully connected 256x256
   actor-critic per team, shared by the team's agents; GAE; clipped surrogate; Adam; the same
   rollout length per env, batch, epochs, minibatches and hyperparameters as ours, :data:`PPO`).
   Ours: the Trainer (``common.make_trainer``) with PPO at that config.

Time: each measurement is capped at ``--seconds``. Where VMAS cannot finish a rollout of the
config's length within the cap (its step takes seconds at 110 agents), the rollout rate is
measured over the steps it did and the PPO update is run, timed, on a batch of the full size
whose rows repeat the steps collected (the update's work depends on the batch's size, not its
values); the iteration time is then composed, and the row says so (``rollout_steps_measured``).

Needs the staged wheels ``.device/peer/*.whl`` (vmas 1.5.2, gym 0.26.2, gym-notices 0.0.8; no
pyglet: vmas imports it only to render), installed here into ``/tmp/peer_site`` without network.
Usage (GPU machine, repo root, after ``source .device/setup.sh``)::

    python benchmarks/bench_vmas_peer.py [--seconds 3] [--configs tutorial_100envs ...] [--grid 100x10+100@250]
    python benchmarks/bench_vmas_peer.py --device cpu --quick --results-dir /tmp   # CPU smoke run
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from common import TAG_TUTORIAL_A2C, make_trainer, write_results

ROOT = Path(__file__).resolve().parents[1]
PEER_WHEELS = ROOT / ".device" / "peer"
PEER_SITE = Path("/tmp/peer_site")
VMAS_VERSION = "1.5.2"
VMAS_ACTIONS = 9  # simple_tag with continuous_actions=False: a 3 x 3 grid of x/y forces in one Discrete(9)
EPISODE_LENGTH = 500  # our Tag continuous run config; VMAS's max_steps is set to it
K_OBSERVED = 10  # our run config's num_other_agents_observed (capped at N - 1)

#: PPO settings shared by both sides: the bundled Tag continuous run config's measured PPO defaults.
PPO: dict[str, Any] = {"gamma": 0.98, "gae_lambda": 0.95, "clip_param": 0.2, "vf_loss_coeff": 0.5,
                       "entropy_coeff": 0.01, "num_epochs": 4, "num_minibatches": 4, "max_grad_norm": 0.5,
                       "lr": {"runner": 0.001, "tagger": 0.0003}, "fc_dims": [256, 256]}


@dataclass(frozen=True)
class PeerConfig:
    """One matched config: ``envs`` replicas of ``taggers`` + ``runners`` agents, ``steps_per_env``
    rollout steps per training iteration."""

    name: str
    envs: int
    taggers: int
    runners: int
    steps_per_env: int

    @property
    def agents(self) -> int:
        return self.taggers + self.runners

    @property
    def train_batch_size(self) -> int:
        return self.envs * self.steps_per_env

    @property
    def observed(self) -> int:
        """K of our partial observation: the run config's 10, at most N - 1."""
        return min(K_OBSERVED, self.agents - 1)


CONFIGS = {c.name: c for c in (
    PeerConfig("tutorial_100envs", 100, 10, 100, 250),  # the 2.7.1 tutorial sizes (batch 25,000)
    PeerConfig("1000envs_5x100", 1000, 5, 100, 50),
    PeerConfig("vmas_scale_4096envs_3x1", 4096, 3, 1, 100),  # VMAS's typical scale, simple_tag's default teams
)}
QUICK = PeerConfig("quick_4envs_2x3", 4, 2, 3, 6)


def parse_grid(spec: str) -> list[PeerConfig]:
    """``"100x10+100@250,4096x3+1@100"`` -> configs (ENVS x TAGGERS + RUNNERS @ STEPS_PER_ENV)."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        m = re.fullmatch(r"(\d+)x(\d+)\+(\d+)@(\d+)", item)
        if not m or min(int(g) for g in m.groups()) < 1:
            raise SystemExit(f"--grid item {item!r}: expected ENVSxTAGGERS+RUNNERS@STEPS with positive integers, "
                             f"e.g. 100x10+100@250")
        envs, taggers, runners, steps = (int(g) for g in m.groups())
        out.append(PeerConfig(f"{envs}envs_{taggers}x{runners}_T{steps}", envs, taggers, runners, steps))
    return out


def vmas_obs_dims(taggers: int, runners: int, landmarks: int = 0) -> dict[str, int]:
    """Observation lengths of VMAS 1.5.2 ``simple_tag`` (``observe_same_team``, ``observe_pos``,
    ``observe_vel`` at their defaults): own velocity and position (4), each landmark's relative
    position, every other agent's relative position, and the velocities of the runners (the other
    runners, for a runner)."""
    base = 4 + 2 * landmarks + 2 * (taggers + runners - 1)
    return {"tagger": base + 2 * runners, "runner": base + 2 * (runners - 1)}


def our_obs_dim(cfg: PeerConfig) -> int:
    """Our Tag continuous partial observation: 7 features per observed agent, then the time."""
    return 7 * cfg.observed + 1


def our_overrides(cfg: PeerConfig, backend: str) -> list[str]:
    """Dotted run-config overrides (on top of ``common.TAG_TUTORIAL_A2C``) for our Trainer at ``cfg``
    with the :data:`PPO` settings."""
    keys = {k: PPO[k] for k in ("gamma", "gae_lambda", "clip_param", "vf_loss_coeff", "entropy_coeff",
                                 "num_epochs", "num_minibatches", "max_grad_norm")}
    per_policy = [f"policy.{p}.{k}={v}" for p in ("runner", "tagger") for k, v in
                  {"algorithm": "PPO", **keys, "normalize_advantage": "true", "clip_grad_norm": "true",
                   "lr": PPO["lr"][p], "model.fc_dims": json.dumps(PPO["fc_dims"])}.items()]
    return [f"env.num_taggers={cfg.taggers}", f"env.num_runners={cfg.runners}",
            f"env.num_other_agents_observed={cfg.observed}", f"env.episode_length={EPISODE_LENGTH}",
            f"trainer.num_envs={cfg.envs}", f"trainer.train_batch_size={cfg.train_batch_size}",
            "trainer.num_episodes=100000000", "trainer.seed=0", f"trainer.env_backend={backend}", *per_policy]


# ----------------------------------------------------------------------------- VMAS staging
def ensure_vmas(site: Path = PEER_SITE, wheels: Path = PEER_WHEELS) -> Any:
    """Import vmas, installing the staged wheels into ``site`` (offline, no dependencies) first
    when it is not importable. Raises SystemExit naming the fix when the wheels are missing."""
    try:
        return importlib.import_module("vmas")
    except ImportError:
        pass
    staged = sorted(wheels.glob("*.whl"))
    if not any(p.name.startswith("vmas-") for p in staged):
        raise SystemExit(f"vmas is not importable and no staged wheel is in {wheels}: on a machine with network run "
                         f"`pip wheel vmas=={VMAS_VERSION} gym==0.26.2 gym-notices==0.0.8 --no-deps -w {wheels}`")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                           "--upgrade", "--target", str(site), *map(str, staged)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"installing the staged VMAS wheels into {site} failed:\n{proc.stderr[-2000:]}")
    sys.path.insert(0, str(site))  # before any other `gym` on the path
    importlib.invalidate_caches()
    return importlib.import_module("vmas")


# ----------------------------------------------------------------------------- timing
def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_repeats(step: Callable[[], None], device: torch.device, seconds: float, repeats: int,
                  warmup: int = 2) -> list[tuple[int, float]]:
    """``(steps, seconds)`` of ``repeats`` timed runs of ``step`` (synchronize + perf_counter), after
    ``warmup`` calls. One call is timed first; each repeat then runs as many calls as fit in
    ``seconds / repeats`` (at least one), and when single calls are that slow, fewer repeats run
    (as many as fit in twice ``seconds``, at least one)."""
    for _ in range(warmup):
        step()
    synchronize(device)
    t0 = time.perf_counter()
    step()
    synchronize(device)
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(1, min(100_000, int(seconds / repeats / one)))
    out = []
    for _ in range(max(1, min(repeats, int(2 * seconds / (n * one))))):
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        synchronize(device)
        out.append((n, time.perf_counter() - t0))
    return out


def rate_summary(runs: list[tuple[int, float]], envs: int, agents: int) -> dict[str, Any]:
    """Median env-steps/s and agent-steps/s over the repeats, with each repeat's steps and seconds."""
    rates = [envs * n / s for n, s in runs]
    med = statistics.median(rates)
    return {"env_steps_per_s": med, "agent_steps_per_s": med * agents, "repeat_env_steps_per_s": rates,
            "repeats": [{"steps": n, "seconds": s} for n, s in runs]}


# ----------------------------------------------------------------------------- VMAS side
def make_vmas(vmas: Any, cfg: PeerConfig, device: torch.device, seed: int = 0) -> Any:
    return vmas.make_env("simple_tag", num_envs=cfg.envs, device=device, continuous_actions=False,
                         max_steps=EPISODE_LENGTH, seed=seed, num_adversaries=cfg.taggers, num_good_agents=cfg.runners,
                         num_landmarks=0)


def vmas_teams(env: Any) -> dict[str, list[int]]:
    """Agent indices of each team (VMAS lists adversaries first)."""
    return {"tagger": [i for i, a in enumerate(env.agents) if a.adversary],
            "runner": [i for i, a in enumerate(env.agents) if not a.adversary]}


def vmas_step(env: Any, actions: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """One VMAS step; envs that finished are reset (all at once when all finished, as ``max_steps``
    makes them). Returns the next observations, the rewards and the done flags."""
    obs, rews, dones, _ = env.step(actions)
    if bool(dones.any()):
        if bool(dones.all()):
            obs = env.reset()
        else:
            for i in dones.nonzero().flatten().tolist():
                env.reset_at(i)
            obs = env.get_from_scenario(get_observations=True, get_rewards=False, get_infos=False, get_dones=False)[0]
    return obs, rews, dones


def measure_vmas_sim(vmas: Any, cfg: PeerConfig, device: torch.device, seconds: float, repeats: int) -> dict:
    env = make_vmas(vmas, cfg, device)
    env.reset()
    n = env.n_agents
    count = [0]

    def step() -> None:
        acts = torch.randint(0, VMAS_ACTIONS, (n, cfg.envs, 1), device=device)
        vmas_step(env, list(acts.unbind(0)))
        count[0] += 1

    runs = timed_repeats(step, device, seconds, repeats, warmup=1)
    # every env advanced once per step and restarted after EPISODE_LENGTH steps
    assert bool((env.steps == count[0] % EPISODE_LENGTH).all()), "VMAS envs did not advance as expected"
    return {**rate_summary(runs, cfg.envs, cfg.agents), "timing": "synchronize + perf_counter"}


class TeamPolicy(nn.Module):
    """Actor-critic MLP like ours: ``Linear -> ReLU`` per hidden width, a categorical policy head and a
    value head on the last hidden layer."""

    def __init__(self, obs_dim: int, num_actions: int, fc_dims: list[int]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for hidden in fc_dims:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        self.trunk = nn.Sequential(*layers)
        self.pi = nn.Linear(width, num_actions)
        self.v = nn.Linear(width, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def sample_actions(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Categorical draws by the Gumbel-max trick, and their log-probabilities."""
    gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp_min(1e-20)))
    actions = (logits + gumbel).argmax(-1)
    return actions, torch.log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, last_values: torch.Tensor,
        gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimates and returns over a rollout.

    ``rewards``, ``values``: (T, E, ...); ``dones``: (T, E), 1 where the episode ended with that step
    (no bootstrap across it); ``last_values``: (E, ...), the values of the observations after step T.
    """
    adv = torch.empty_like(rewards)
    running = torch.zeros_like(last_values)
    next_values = last_values
    for t in range(rewards.shape[0] - 1, -1, -1):
        live = (1.0 - dones[t].float()).view(-1, *([1] * (rewards.dim() - 2)))
        delta = rewards[t] + gamma * next_values * live - values[t]
        running = delta + gamma * lam * live * running
        adv[t] = running
        next_values = values[t]
    return adv, adv + values


def ppo_update(net: TeamPolicy, opt: torch.optim.Optimizer, batch: dict[str, torch.Tensor], num_samples: int,
               epochs: int, minibatches: int, settings: dict[str, Any] = PPO) -> dict[str, float]:
    """PPO epochs over ``num_samples`` samples drawn from ``batch`` (flat ``obs``, ``actions``,
    ``log_probs``, ``advantages``, ``returns``): sample ``i`` of an epoch's permutation is row
    ``i mod len(batch)``, so ``num_samples = len(batch)`` is plain PPO and a larger ``num_samples``
    repeats the rows collected. Advantages are standardized over the batch."""
    have = batch["obs"].shape[0]
    adv = batch["advantages"]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8) if have > 1 else adv - adv.mean()
    size = max(1, num_samples // minibatches)
    clip = settings["clip_param"]
    for _ in range(epochs):
        perm = torch.randperm(num_samples, device=adv.device) % have
        for j in range(minibatches):
            idx = perm[j * size:(j + 1) * size]
            logits, values = net(batch["obs"][idx])
            logp_all = torch.log_softmax(logits, -1)
            logp = logp_all.gather(-1, batch["actions"][idx].unsqueeze(-1)).squeeze(-1)
            ratio = torch.exp(logp - batch["log_probs"][idx])
            a = adv[idx]
            policy_loss = -torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a).mean()
            value_loss = (values - batch["returns"][idx]).pow(2).mean()
            entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
            loss = policy_loss + settings["vf_loss_coeff"] * value_loss - settings["entropy_coeff"] * entropy
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), settings["max_grad_norm"])
            opt.step()
    last = {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}
    return {k: float(v.detach()) for k, v in last.items()}


class VmasPPO:
    """The VMAS side of the end-to-end measurement: rollout of ``steps`` (<= the config's length)
    and a PPO update per team."""

    def __init__(self, vmas: Any, cfg: PeerConfig, device: torch.device, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.cfg, self.device = cfg, device
        self.env = make_vmas(vmas, cfg, device, seed)
        self.teams = vmas_teams(self.env)
        self.obs = self.env.reset()
        dims = {team: int(self.obs[ids[0]].shape[-1]) for team, ids in self.teams.items()}
        self.obs_dims = dims
        self.nets = {team: TeamPolicy(dims[team], VMAS_ACTIONS, PPO["fc_dims"]).to(device) for team in self.teams}
        self.opts = {team: torch.optim.Adam(net.parameters(), lr=PPO["lr"][team]) for team, net in self.nets.items()}

    def team_obs(self, team: str) -> torch.Tensor:
        return torch.stack([self.obs[i] for i in self.teams[team]], dim=1)  # (E, n_team, d)

    def rollout(self, steps: int, deadline: float | None = None) -> dict[str, dict[str, torch.Tensor]]:
        """Up to ``steps`` steps (fewer when ``deadline``, a perf_counter time, passes); returns each
        team's flat batch (obs, actions, log_probs, advantages, returns)."""
        store: dict[str, dict[str, list[torch.Tensor]]] = {t: {k: [] for k in ("obs", "actions", "log_probs", "values",
                                                                            "rewards")} for t in self.teams}
        dones = []
        for _ in range(steps):
            actions = [torch.empty(0)] * self.env.n_agents
            with torch.no_grad():
                for team, ids in self.teams.items():
                    x = self.team_obs(team)
                    logits, values = self.nets[team](x)
                    a, logp = sample_actions(logits)
                    for k, v in (("obs", x), ("actions", a), ("log_probs", logp), ("values", values)):
                        store[team][k].append(v)
                    for j, i in enumerate(ids):
                        actions[i] = a[:, j:j + 1]
            self.obs, rews, done = vmas_step(self.env, actions)
            for team, ids in self.teams.items():
                store[team]["rewards"].append(torch.stack([rews[i] for i in ids], dim=1))
            dones.append(done)
            if deadline is not None:
                synchronize(self.device)
                if time.perf_counter() > deadline:
                    break
        done_t = torch.stack(dones)
        out = {}
        with torch.no_grad():
            for team in self.teams:
                s = {k: torch.stack(v) for k, v in store[team].items()}
                _, last_values = self.nets[team](self.team_obs(team))
                adv, ret = gae(s["rewards"], s["values"], done_t, last_values, PPO["gamma"], PPO["gae_lambda"])
                out[team] = {"obs": s["obs"].flatten(0, 2), "actions": s["actions"].flatten(),
                             "log_probs": s["log_probs"].flatten(), "advantages": adv.flatten(),
                             "returns": ret.flatten()}
        return out

    def update(self, batches: dict[str, dict[str, torch.Tensor]], steps_per_env: int,
               epochs: int = PPO["num_epochs"], minibatches: int = PPO["num_minibatches"]) -> dict[str, dict]:
        """One PPO update per team on ``steps_per_env`` steps' worth of samples."""
        return {team: ppo_update(self.nets[team], self.opts[team], batches[team],
                                 steps_per_env * self.cfg.envs * len(self.teams[team]), epochs, minibatches)
                for team in self.teams}


def measure_vmas_ppo(vmas: Any, cfg: PeerConfig, device: torch.device, seconds: float) -> dict:
    if device.type == "cuda":  # as our Trainer does (trainer.tf32)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    ppo = VmasPPO(vmas, cfg, device)
    warm = ppo.rollout(1)  # warm-up: allocator, kernels, a small update
    ppo.update(warm, 1, epochs=1, minibatches=1)
    synchronize(device)
    t0 = time.perf_counter()
    batches = ppo.rollout(cfg.steps_per_env, deadline=t0 + seconds)
    synchronize(device)
    rollout_s = time.perf_counter() - t0
    have = batches["runner"]["actions"].numel() // (cfg.envs * cfg.runners)
    t1 = time.perf_counter()
    losses = ppo.update(batches, cfg.steps_per_env)
    synchronize(device)
    update_s = time.perf_counter() - t1
    for team, net in ppo.nets.items():
        assert all(bool(torch.isfinite(p).all()) for p in net.parameters()), f"non-finite {team} weights"
    rollout_full_s = rollout_s * cfg.steps_per_env / have
    iteration_s = rollout_full_s + update_s
    return {"env_steps_per_s": cfg.train_batch_size / iteration_s,
            "agent_steps_per_s": cfg.train_batch_size * cfg.agents / iteration_s,
            "rollout_steps_measured": have, "rollout_steps_per_iteration": cfg.steps_per_env,
            "measured": "full iteration" if have == cfg.steps_per_env else
            f"composed: rollout rate over {have} of {cfg.steps_per_env} steps per env, update on the full batch",
            "rollout_s_measured": rollout_s, "rollout_env_steps_per_s": cfg.envs * have / rollout_s,
            "update_s": update_s,
            "update_samples": {t: cfg.train_batch_size * len(ids) for t, ids in ppo.teams.items()},
            "iteration_s": iteration_s, "obs_dims": ppo.obs_dims, "last_losses": losses}


# ----------------------------------------------------------------------------- our side
def our_run_config(cfg: PeerConfig, backend: str) -> Any:
    from example_envs import get_default_config_path
    from warp_drive.config import load_run_config

    return load_run_config(get_default_config_path("tag_continuous"), [*TAG_TUTORIAL_A2C, *our_overrides(cfg, backend)])


def measure_our_sim(cfg: PeerConfig, backend: str, seconds: float, repeats: int) -> dict:
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.services.sampler import Sampler

    run = our_run_config(cfg, backend)
    w = EnvWrapper(TagContinuous(**run.env), num_envs=cfg.envs, env_backend=backend)
    w.reset_all_envs()
    dm = w.cuda_data_manager
    s = Sampler(w.cuda_function_manager)
    s.init_random(0)
    heads = (w.env.num_acceleration_actions, w.env.num_turn_actions)
    s.register_actions(dm, "sampled_actions", max(heads))
    probs = [torch.full((cfg.envs, cfg.agents, n), 1 / n, device=dm.device) for n in heads]

    def step() -> None:
        for head, p in enumerate(probs):
            s.sample(dm, p, "sampled_actions", head=head, check=False)
        w.step_all_envs()
        w.reset_only_done_envs()

    runs = timed_repeats(step, dm.device, seconds, repeats, warmup=5)
    assert torch.isfinite(dm.data_on_device_via_torch("observations")).all(), "non-finite observations"
    return {**rate_summary(runs, cfg.envs, cfg.agents), "timing": "synchronize + perf_counter, eager launches",
            "obs_dim": int(w.env.obs_dim), "blocks_per_env": int(w.cuda_function_manager.blocks_per_env),
            "action_heads": list(heads), "neighbour_grid_side": int(w.env.neighbour_grid_side)}


def measure_our_ppo(cfg: PeerConfig, backend: str, seconds: float) -> dict:
    device = torch.device("cuda" if backend == "pycuda" else "cpu")
    with tempfile.TemporaryDirectory() as results_dir:
        t = make_trainer("tag_continuous", our_overrides(cfg, backend), backend=backend, results_dir=results_dir)
        t.train(1)  # warm-up: kernel build, CUDA graph capture, allocator
        synchronize(device)
        t0 = time.perf_counter()
        t.train(1)
        synchronize(device)
        iters = max(1, min(50, round(seconds / max(time.perf_counter() - t0, 1e-6))))
        steps0 = t.perf["steps"]
        synchronize(device)
        t0 = time.perf_counter()
        t.train(iters)
        synchronize(device)
        wall = time.perf_counter() - t0
        steps = t.perf["steps"] - steps0
        assert steps == iters * cfg.train_batch_size, f"step count {steps} != {iters} x {cfg.train_batch_size}"
        for p in t.policies.values():
            assert all(bool(torch.isfinite(q).all()) for q in p.model.parameters()), "non-finite weights"
        return {"env_steps_per_s": steps / wall, "agent_steps_per_s": steps * cfg.agents / wall, "iterations": iters,
                "wall_s": wall, "rollout_steps_per_iteration": cfg.steps_per_env}


# ----------------------------------------------------------------------------- report
def games_differ(cfgs: list[PeerConfig]) -> str:
    dims = "; ".join(f"{c.name}: VMAS tagger {vmas_obs_dims(c.taggers, c.runners)['tagger']}, runner "
                     f"{vmas_obs_dims(c.taggers, c.runners)['runner']}, ours {our_obs_dim(c)}" for c in cfgs)
    return (
        "VMAS simple_tag (1.5.2, num_landmarks=0, discrete actions: one Discrete(9), a 3 x 3 grid of x/y forces): "
        "2-D point-mass physics in the box [-1, 1]^2, 10 physics substeps per step (World(substeps=10, "
        "collision_force=500)). Each step first converts and checks every agent's action (asserts on NaN and range "
        "that the host reads back). Each substep loops in Python over the entities (action force, friction and "
        "gravity terms, then integration with speed and position clamps) and over all N(N-1)/2 entity pairs, "
        "testing whether any env has the pair within reach (a vector norm and an .any() read back by the host); the "
        "pairs that pass get their soft contact forces from one stacked tensor computation, added to each entity's "
        "force one pair at a time. Observations are built per agent by torch.cat of own velocity and position, every "
        "other agent's relative position and the runners' velocities: O(N) floats per agent and O(N^2) small tensor "
        "ops per step; rewards come from pairwise tagger-runner collision tests. The number of kernel launches and "
        "host syncs per step grows with the agents (thousands at ~100 agents), not with the envs. Ours (Tag "
        "continuous): kinematic agents (a 21-entry acceleration table and a 21-entry turn table, two categorical "
        "heads) on a 20 x 20 square, no collision forces; a step is one CUDA step-kernel launch over all envs (one "
        "block per env at these sizes: see blocks_per_env; three phase kernels when an env spans several blocks) that "
        "moves the agents, writes each agent's partial observation of the K nearest agents still in the game (7 "
        "floats each, plus the time; found by scanning every pair below 256 agents) and tags runners within the "
        "tagging distance (tagged runners leave); the simulator-alone timing adds the two in-kernel sampler launches "
        "and the done-env reset. Observation lengths, " + dims + "."
    )


def compare(vmas_row: dict, our_row: dict) -> float | None:
    v, o = vmas_row.get("env_steps_per_s"), our_row.get("env_steps_per_s")
    return o / v if v and o else None


def guarded(fn: Callable[..., dict], *args: Any) -> dict:
    """Run one measurement; report an error instead of stopping the job (and free the GPU's cache)."""
    try:
        return fn(*args)
    except Exception as err:  # report and continue with the other measurements
        return {"error": repr(err)[:500]}
    finally:
        gc.collect()  # the measurement's env, trainer and buffers
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cuda: VMAS on the GPU, ours on pycuda; cpu: VMAS on the CPU, ours on the cpu backend")
    ap.add_argument("--seconds", type=float, default=3.0, help="cap of each measurement, seconds")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats of each simulator measurement")
    ap.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--grid", default="", help="extra configs ENVSxTAGGERS+RUNNERS@STEPS, comma-separated")
    ap.add_argument("--quick", action="store_true", help=f"only {QUICK.name}, 0.3 s per measurement (smoke run)")
    ap.add_argument("--skip", nargs="*", default=[], choices=("sim", "ppo"), help="measurements to leave out")
    ap.add_argument("--results-dir", default=None, help="where the JSON goes (default benchmarks/results)")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda needs a GPU; use --device cpu (with --quick for a smoke run)")
    device = torch.device(args.device)
    backend = "pycuda" if args.device == "cuda" else "cpu"
    cfgs = [QUICK] if args.quick else [CONFIGS[n] for n in args.configs] + parse_grid(args.grid)
    seconds = 0.3 if args.quick else args.seconds
    vmas = ensure_vmas()
    rows: dict[str, Any] = {}
    for cfg in cfgs:
        row: dict[str, Any] = {**asdict(cfg), "agents": cfg.agents, "train_batch_size": cfg.train_batch_size,
                               "observed_K_ours": cfg.observed,
                               "obs_dims": {"vmas": vmas_obs_dims(cfg.taggers, cfg.runners), "ours": our_obs_dim(cfg)}}
        if "sim" not in args.skip:
            sim = {"vmas": guarded(measure_vmas_sim, vmas, cfg, device, seconds, args.repeats),
                   "ours": guarded(measure_our_sim, cfg, backend, seconds, args.repeats)}
            sim["ratio_env_steps_per_s"] = compare(sim["vmas"], sim["ours"])
            row["simulator"] = sim
        if "ppo" not in args.skip:
            ppo = {"vmas": guarded(measure_vmas_ppo, vmas, cfg, device, seconds),
                   "ours": guarded(measure_our_ppo, cfg, backend, seconds)}
            ppo["ratio_env_steps_per_s"] = compare(ppo["vmas"], ppo["ours"])
            row["ppo"] = ppo
        rows[cfg.name] = row
        print(json.dumps({cfg.name: {k: {s: row[k][s].get("env_steps_per_s", row[k][s].get("error"))
                                         for s in ("vmas", "ours")} | {"ratio": row[k]["ratio_env_steps_per_s"]}
                                     for k in ("simulator", "ppo") if k in row}}, default=str), flush=True)
    payload = {"device": args.device, "our_backend": backend, "vmas_version": getattr(vmas, "__version__", "?"),
               "vmas_scenario": {"name": "simple_tag", "continuous_actions": False, "num_landmarks": 0,
                                 "max_steps": EPISODE_LENGTH, "actions": VMAS_ACTIONS},
               "ppo_settings": PPO, "seconds_cap": seconds, "repeats": args.repeats, "configs": rows,
               "games_differ": games_differ(cfgs)}
    path = write_results("vmas_peer" if not args.quick else "vmas_peer_quick", payload,
                         Path(args.results_dir) if args.results_dir else None)
    print("written", path)
    return payload


if __name__ == "__main__":
    main()
