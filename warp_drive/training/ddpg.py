"""DDPG (2.7.1's ``TrainerDDPG``): deterministic actor, Q critic, target networks, OU exploration.

Each iteration rolls out ``B = train_batch_size // num_envs`` steps per env on the device, as
2.7.1 does (on-policy batches: every iteration trains on the steps it just collected), then takes
``num_epochs x num_minibatches`` gradient steps (1 x 1 = 2.7.1) on them:

* **Exploration**: ``a = mu(s) + scale * x`` with one Ornstein-Uhlenbeck state ``x`` per
  (env, agent, action dim) kept on the device: ``x <- (1 - damping) * x + stddev * N(0, 1)``
  (2.7.1's formula; ``sampler.params.damping / stddev / scale``, numbers or schedules evaluated at
  the policy's timestep at the start of each rollout).
* **n-step targets** (``trainer.n_step``): ``y_t = r_t + ... + gamma^(m-1) r_(t+m-1)
  + gamma^m Q'(s_(t+m), mu'(s_(t+m)))`` where ``m <= n`` stops at the first episode end (no
  bootstrap after a terminal step) and at the end of the rollout, where ``s_B`` is the observation
  after the last step (2.7.1 bootstrapped its last window from the value of its own observation,
  without its reward: defect 9.5/9.6). At a time limit with ``trainer.bootstrap_at_time_limit``
  the target bootstraps from the final observation of the episode (before its reset).
* **Updates**: critic on ``MSE(Q(s, a), y)``, then actor on ``-mean Q(s, mu(s))`` with the
  critic's parameters frozen (2.7.1 let the actor loss add gradients to the critic: defect 9.6),
  gradient clipping per network, then Polyak updates of both targets with ``tau``.

Nothing is copied to the host during training except on logging iterations (metrics).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.engine import EngineBase

logger = logging.getLogger(__name__)

Tensor = torch.Tensor
ROLES = ("actor", "critic")


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


# --------------------------------------------------------------------------- OU noise
class OUNoise:
    """Ornstein-Uhlenbeck exploration noise, one state per row, on the device.

    ``x <- (1 - damping) * x + stddev * z`` with ``z ~ N(0, 1)``; the perturbed action is
    ``mu + scale * x``. The stationary standard deviation is ``stddev / sqrt(1 - (1 - damping)^2)``
    and the lag-k autocorrelation ``(1 - damping)^k``. With ``scale == 0`` the action is ``mu`` and
    the state does not move (2.7.1's deterministic evaluation).

    Args:
        shape: State shape, e.g. (E, A, d).
        device: Where the state lives.
        generator: torch Generator on ``device`` (seeded by the trainer).
    """

    def __init__(self, shape: Sequence[int], device: torch.device, generator: torch.Generator | None = None) -> None:
        self.state = torch.zeros(tuple(shape), dtype=torch.float32, device=device)
        self.generator = generator

    def step(self, damping: float, stddev: float) -> Tensor:
        """Advance the process one step; returns the new state."""
        z = torch.randn(self.state.shape, device=self.state.device, generator=self.generator)
        self.state.mul_(1.0 - float(damping)).add_(z, alpha=float(stddev))
        return self.state

    def perturb(self, mu: Tensor, damping: float, stddev: float, scale: float) -> Tensor:
        """``mu + scale * x`` after one step of ``x`` (``mu`` itself when ``scale`` is 0)."""
        if scale == 0:
            return mu
        return mu + float(scale) * self.step(damping, stddev)

    def reset(self) -> None:
        self.state.zero_()


# --------------------------------------------------------------------------- n-step targets
def nstep_returns(rewards: Tensor, terminated: Tensor, truncated: Tensor, gamma: float, n: int) -> tuple[Tensor, Tensor, Tensor]:
    """The reward part, bootstrap step and bootstrap coefficient of every step's n-step target.

    For each step t the target is ``R_t + coef_t * Q'(s'_(last_t))``, where ``s'_k`` is the
    observation right after step k (before a reset), ``R_t = sum_(k<m) gamma^k r_(t+k)`` and
    ``coef_t = gamma^m`` (0 if step ``t+m-1`` terminated). ``m <= n`` stops after the first step
    that ends an episode (terminated or truncated) and at the last step of the rollout.

    Args:
        rewards: (B, E, A) float.
        terminated: (B, E) bool, episode ended for real (no bootstrap).
        truncated: (B, E) bool, episode cut by the time limit (bootstrap from its final obs).
        gamma: Discount.
        n: Horizon >= 1.

    Returns:
        ``(R (B, E, A), last (B, E) long, coef (B, E) float)``.
    """
    B, E = terminated.shape
    dev = rewards.device
    R = torch.zeros_like(rewards)
    coef = torch.zeros((B, E), dtype=rewards.dtype, device=dev)
    last = torch.zeros((B, E), dtype=torch.long, device=dev)
    alive = torch.ones((B, E), dtype=torch.bool, device=dev)
    t_idx = torch.arange(B, device=dev)[:, None].expand(B, E)
    for k in range(max(1, int(n))):
        rows = B - k  # steps t = 0 .. B-k-1 still have step t+k inside the rollout
        if rows <= 0:
            break
        a = alive[:rows]
        R[:rows] += torch.where(a[..., None], (gamma ** k) * rewards[k:], torch.zeros_like(rewards[k:]))
        term, trunc = terminated[k:], truncated[k:]
        end = (term | trunc) | (t_idx[:rows] + k == B - 1) | (k == n - 1)
        stop = a & end
        coef[:rows] = torch.where(stop, torch.where(term, 0.0, gamma ** (k + 1)).to(coef.dtype), coef[:rows])
        last[:rows] = torch.where(stop, t_idx[:rows] + k, last[:rows])
        alive[:rows] = a & ~end
    return R, last, coef


# --------------------------------------------------------------------------- one gradient step
def ddpg_update(nets: "DDPGNets", obs: Tensor, actions: Tensor, targets: Tensor, tau: float,
                max_grad_norm: float | None) -> dict[str, Tensor]:
    """One critic step, one actor step (critic frozen), then soft target updates.

    Args:
        nets: the four networks and two optimizers.
        obs: ``(*lead, *obs)``; actions: ``(*lead, d)``; targets: ``(*lead,)`` n-step targets y.
        tau: Polyak rate.
        max_grad_norm: clip level of each network's gradient norm (None: no clipping).

    Returns:
        Metric tensors (no host sync).
    """
    clip = math.inf if max_grad_norm is None else float(max_grad_norm)
    q = nets.train_critic(obs, actions)
    critic_loss = torch.nn.functional.mse_loss(q, targets)
    nets.critic_optimizer.zero_grad(set_to_none=True)
    critic_loss.backward()
    critic_norm = nn.utils.clip_grad_norm_(nets.critic.parameters(), clip)
    nets.critic_optimizer.step()
    critic_params = [p for p in nets.critic.parameters() if p.requires_grad]
    for p in critic_params:  # the actor's loss must not train the critic (2.7.1 defect 9.6)
        p.requires_grad_(False)
    try:
        actor_loss = -nets.critic(obs, nets.train_actor(obs)).mean()
        nets.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
    finally:
        for p in critic_params:
            p.requires_grad_(True)
    actor_norm = nn.utils.clip_grad_norm_(nets.actor.parameters(), clip)
    nets.actor_optimizer.step()
    soft_update(nets.target_actor, nets.actor, tau)
    soft_update(nets.target_critic, nets.critic, tau)
    return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(), "q_mean": q.detach().mean(),
            "target_mean": targets.mean(), "grad_norm_actor": actor_norm.detach(), "grad_norm_critic": critic_norm.detach()}


@torch.no_grad()
def bootstrap_targets(nets: "DDPGNets", returns: Tensor, coef: Tensor, boot_obs: Tensor) -> Tensor:
    """``returns + coef * Q'(s', mu'(s'))`` with the target networks."""
    return returns + coef * nets.target_critic(boot_obs, nets.target_actor(boot_obs))


@dataclass
class DDPGNets:
    """A policy's networks and optimizers (``train_*`` are the DDP-wrapped ones when distributed)."""

    actor: nn.Module
    critic: nn.Module
    target_actor: nn.Module
    target_critic: nn.Module
    actor_optimizer: torch.optim.Optimizer
    critic_optimizer: torch.optim.Optimizer
    train_actor: nn.Module | None = None
    train_critic: nn.Module | None = None

    def __post_init__(self) -> None:
        self.train_actor = self.train_actor or self.actor
        self.train_critic = self.train_critic or self.critic
        for m in (self.target_actor, self.target_critic):
            m.requires_grad_(False)


@dataclass
class DDPGBuffers:
    """One policy's rollout, time first: obs, next_obs (after the step, before any reset):
    ``(B, E, A, *obs)``; actions (B, E, A, d); rewards (B, E, A); n-step parts filled by the trainer."""

    obs: Tensor
    next_obs: Tensor
    actions: Tensor
    rewards: Tensor
    returns: Tensor
    coef: Tensor
    last: Tensor

    @classmethod
    def allocate(cls, steps: int, obs_example: Tensor, action_dim: int) -> "DDPGBuffers":
        E, A = obs_example.shape[:2]
        dev = obs_example.device
        like = lambda: torch.zeros((steps, *obs_example.shape), dtype=obs_example.dtype, device=dev)  # noqa: E731
        f = lambda *s: torch.zeros(s, dtype=torch.float32, device=dev)  # noqa: E731
        return cls(like(), like(), f(steps, E, A, action_dim), f(steps, E, A), f(steps, E, A), f(steps, E),
                   torch.zeros((steps, E), dtype=torch.long, device=dev))

    def boot_obs(self) -> Tensor:
        """``next_obs[last[t, e], e]``: the observation each target bootstraps from, ``(B, E, A, *obs)``."""
        B, E = self.last.shape
        env = torch.arange(E, device=self.last.device)[None, :].expand(B, E)
        return self.next_obs[self.last, env]


@dataclass
class DDPGPolicy:
    """Everything TrainerDDPG keeps for one policy tag."""

    tag: str
    agent_ids: list[int]
    agent_index: Tensor
    contiguous_all: bool
    nets: DDPGNets
    config: Any
    to_train: bool
    actor_lr_schedule: Any
    critic_lr_schedule: Any
    ou: OUNoise
    buffers: DDPGBuffers
    stats: Any
    timestep: int = 0
    obs_agents_last: bool = False

    @property
    def lr_schedule(self) -> Any:
        """The actor's learning-rate schedule (the ``<tag>/lr`` metric)."""
        return self.actor_lr_schedule

    @property
    def num_agents(self) -> int:
        return len(self.agent_ids)

    @property
    def model(self) -> nn.Module:
        """The actor (what acts in the env)."""
        return self.nets.actor

    def select(self, x: Tensor) -> Tensor:
        return x if self.contiguous_all else x.index_select(1, self.agent_index)


# --------------------------------------------------------------------------- trainer
def trainer_class_for(config: Any) -> type:
    """:class:`TrainerDDPG` for a run config whose policies use DDPG, else ``Trainer``."""
    from warp_drive.training.trainer import Trainer

    return TrainerDDPG if any(p.algorithm == "DDPG" for p in config.policy.values()) else Trainer


class TrainerDDPG(EngineBase):
    """Trains DDPG policies (2.7.1's ``TrainerDDPG``; same constructor arguments and methods).

    Args:
        env_wrapper: an :class:`~warp_drive.env_wrapper.EnvWrapper` (pycuda or cpu backend) whose
            agents have Box actions.
        config: a :class:`RunConfig`, a dict in 2.7.1's YAML layout or a YAML path; every policy
            has ``algorithm: DDPG``.
        policy_tag_to_agent_id_map: ``{tag: [agent ids]}``; default: the config's only tag over all
            agents.
        create_separate_placeholders_for_each_policy: only False (shared placeholders).
        obs_dim_corresponding_to_num_agents: ``"first"`` or ``"last"``.
        num_devices, device_id: DDP world size and this process's device (rank).
        results_dir: run directory ``saving.basedir/name/tag/<results_dir>``.
        verbose: log progress.
        model_factory: where ``model.actor.type`` / ``model.critic.type`` are looked up.
        rank: distributed rank (default ``device_id``).
        tensorboard: also write TensorBoard scalars.
    """

    def _check_config(self, config: Any) -> None:
        not_ddpg = [tag for tag, p in config.policy.items() if p.algorithm != "DDPG"]
        if not_ddpg:
            raise ConfigError(f"policies {not_ddpg} are not DDPG ({config.policy[not_ddpg[0]].algorithm}); "
                              "train them with warp_drive.training.trainer.Trainer")

    def _build(self, model_factory: Any) -> None:
        from warp_drive.config.ddpg import OU_DEFAULTS
        from warp_drive.training.rollout import SharedBuffers
        from warp_drive.training.engine import DEFAULT_MODEL_FACTORY
        from warp_drive.training.utils.param_scheduler import ParamScheduler
        from warp_drive.env.constants import Constants

        self.n_step = self.config.trainer.n_step
        dm = self.dm = self.env_wrapper.cuda_data_manager
        if not dm.is_data_on_device(Constants.OBSERVATIONS):
            raise DataShapeError("DDPG reads one `observations` placeholder (Box observations); this env has none")
        self._seed()  # same initial weights on every rank
        self.generator = torch.Generator(device=self.device).manual_seed(self.rank_seed)
        factory = model_factory or DEFAULT_MODEL_FACTORY
        sp = self.config.sampler
        self.noise_schedules = {k: ParamScheduler(sp.ou_noise.get(k, v), f"sampler.params.{k}") for k, v in OU_DEFAULTS.items()}
        self.deterministic = sp.use_argmax
        self.policies = {tag: self._build_policy(tag, ids, factory, ParamScheduler)
                         for tag, ids in self.policy_tag_to_agent_id_map.items()}
        self.load_model_checkpoint()
        self.shared = SharedBuffers(self.steps_per_iter, dm)

    # ------------------------------------------------------------------ set-up
    def _build_policy(self, tag: str, ids: list[int], factory: Any, ParamScheduler: Any) -> DDPGPolicy:
        import copy

        from warp_drive.training.distributed import wrap_model
        from warp_drive.training.models.action_spec import action_heads_from_space, obs_dims_from_space
        from warp_drive.training.policy_state import EpisodeStats, agent_index
        from warp_drive.training.rollout import policy_obs
        from warp_drive.env.constants import Constants

        env, dm = self.env_wrapper.env, self.dm
        pc = self.config.policy[tag]
        kinds = {type(env.action_space[a]).__name__ + str(getattr(env.action_space[a], "shape", "")) for a in ids}
        if len(kinds) > 1:
            raise ConfigError(f"policy '{tag}' mixes agents with different action spaces: {sorted(kinds)}")
        action_spec = action_heads_from_space(env.action_space[ids[0]])
        if not action_spec.is_gaussian:
            raise ConfigError(f"policy '{tag}': DDPG needs continuous (Box) actions; its agents have "
                              f"{type(env.action_space[ids[0]]).__name__} actions. Use `algorithm: A2C` or PPO.")
        obs_dims = obs_dims_from_space(env.observation_space[ids[0]])
        actor = factory.build(pc.model.actor, obs_dims, action_spec).to(self.device)
        critic = factory.build(pc.model.critic, obs_dims, action_spec).to(self.device)
        target_actor, target_critic = copy.deepcopy(actor), copy.deepcopy(critic)
        lr_a = ParamScheduler(pc.lr["actor"], f"policy.{tag}.lr.actor")
        lr_c = ParamScheduler(pc.lr["critic"], f"policy.{tag}.lr.critic")
        nets = DDPGNets(actor, critic, target_actor, target_critic,
                        torch.optim.Adam(actor.parameters(), lr=lr_a.get_param_value(0)),
                        torch.optim.Adam(critic.parameters(), lr=lr_c.get_param_value(0)),
                        wrap_model(actor, self.device), wrap_model(critic, self.device))
        E, N, columns = dm.get_shape(Constants.ACTIONS)[:3] if len(dm.get_shape(Constants.ACTIONS)) >= 3 else (*dm.get_shape(Constants.ACTIONS), 1)
        if columns != action_spec.gaussian_dim:
            raise DataShapeError(f"`{Constants.ACTIONS}` has {columns} columns but policy '{tag}' acts in "
                                 f"{action_spec.gaussian_dim} dimensions")
        idx = agent_index(ids, self.device)
        p = DDPGPolicy(tag, ids, idx, ids == list(range(self.env_wrapper.n_agents)), nets, pc, pc.to_train, lr_a, lr_c,
                       OUNoise((E, len(ids), columns), self.device, self.generator), None, None,  # type: ignore[arg-type]
                       obs_agents_last=self.obs_agents_last)
        example = policy_obs(dm, p, [Constants.OBSERVATIONS])
        p.buffers = DDPGBuffers.allocate(self.steps_per_iter, example, columns)
        p.stats = EpisodeStats.create(E, len(ids), self.device)
        return p

    # ------------------------------------------------------------------ the loop
    def train(self, num_iters: int | None = None) -> dict[str, float]:
        """Run training iterations (all remaining by default); return the last logged metrics."""
        from warp_drive.training.progress import progress_bar

        self.start_episodes()
        self._write_run_config()
        last = self.iteration + (num_iters if num_iters is not None else self.num_iters - self.iteration)
        metrics: dict[str, float] = {}
        for _ in progress_bar(range(self.iteration, last), enabled=self.verbose and self.rank == 0):
            with self.counters.timed("rollout"):
                self.generate_rollout()
            with self.counters.timed("training"):
                update_metrics = self.update()
            self.end_iteration()
            if self.iteration % self.config.saving.metrics_log_freq == 0 or self.iteration == last:
                if self.config.trainer.evaluator:
                    self._add_test_metrics(update_metrics)
                metrics = self.log_metrics(update_metrics)
            if self.iteration % self.config.saving.model_params_save_freq == 0 or self.iteration == self.num_iters:
                self.save_model_checkpoint(self.iteration)
        return metrics

    def noise_params(self) -> dict[str, float]:
        """damping, stddev, scale at the first policy's timestep (scale 0 with ``use_argmax``)."""
        t = next(iter(self.policies.values())).timestep
        out = {k: s.get_param_value(t) for k, s in self.noise_schedules.items()}
        if self.deterministic:
            out["scale"] = 0.0
        return out

    def _obs(self, p: DDPGPolicy) -> Tensor:
        from warp_drive.training.rollout import policy_obs
        from warp_drive.env.constants import Constants

        return policy_obs(self.dm, p, [Constants.OBSERVATIONS])

    @torch.no_grad()
    def _act(self, noise: Mapping[str, float]) -> dict[str, Tensor]:
        """Every policy's (perturbed) actions for the current observations, written to the env."""
        from warp_drive.env.constants import Constants

        placeholder = self.dm.data_on_device_via_torch(Constants.ACTIONS)
        out = {}
        for p in self.policies.values():
            a = p.ou.perturb(p.nets.actor(self._obs(p)), noise["damping"], noise["stddev"], noise["scale"])
            a = a.to(placeholder.dtype).reshape(placeholder.shape[0], p.num_agents, *placeholder.shape[2:])
            if p.contiguous_all:
                placeholder.copy_(a)
            else:
                placeholder.index_copy_(1, p.agent_index, a)
            out[p.tag] = a
        return out

    @torch.no_grad()
    def generate_rollout(self) -> None:
        """``steps_per_iter`` env steps for every env: obs, OU-perturbed actions, rewards, done flags."""
        dm, noise = self.dm, self.noise_params()
        for step in range(self.steps_per_iter):
            for p in self.policies.values():
                p.buffers.obs[step].copy_(self._obs(p))
            actions = self._act(noise)
            for p in self.policies.values():
                p.buffers.actions[step].copy_(actions[p.tag].reshape(p.buffers.actions[step].shape))
            self.env_wrapper.step_all_envs()
            self.shared.record(step, dm)
            for p in self.policies.values():
                p.buffers.next_obs[step].copy_(self._obs(p))
            self.env_wrapper.reset_only_done_envs()
        self._finalize()

    @torch.no_grad()
    def _finalize(self) -> None:
        from warp_drive.training.rollout import split_episode_ends

        sh = self.shared
        done, terminated, truncated = split_episode_ends(sh.done, sh.timestep, self.env_wrapper.episode_length,
                                                         self.bootstrap_at_time_limit, sh.truncated)
        for p in self.policies.values():
            b = p.buffers
            b.rewards.copy_(sh.policy_rewards(p))
            p.stats.update_from_batch(b.rewards, done)
            R, last, coef = nstep_returns(b.rewards, terminated, truncated, p.config.gamma, self.n_step)
            b.returns.copy_(R)
            b.last.copy_(last)
            b.coef.copy_(coef)

    def update(self) -> dict[str, dict[str, Tensor]]:
        """``num_epochs x num_minibatches`` DDPG steps per trained policy on the last rollout."""
        from warp_drive.training.utils.param_scheduler import set_optimizer_lr

        out = {}
        for p in self.policies.values():
            p.timestep += self.config.trainer.train_batch_size
            if not p.to_train:
                continue
            pc, b = p.config, p.buffers
            set_optimizer_lr(p.nets.actor_optimizer, p.actor_lr_schedule.get_param_value(p.timestep))
            set_optimizer_lr(p.nets.critic_optimizer, p.critic_lr_schedule.get_param_value(p.timestep))
            obs_shape = b.obs.shape[3:]
            obs = b.obs.reshape(-1, *obs_shape)
            boot = b.boot_obs().reshape(-1, *obs_shape)
            actions = b.actions.reshape(-1, b.actions.shape[-1])
            returns = b.returns.reshape(-1)
            coef = b.coef[..., None].expand_as(b.returns).reshape(-1)
            n = obs.shape[0]
            size = n // pc.num_minibatches
            metrics: dict[str, Tensor] = {}
            for _ in range(pc.num_epochs):
                order = torch.randperm(n, device=self.device, generator=self.generator) if pc.num_minibatches > 1 else None
                for k in range(pc.num_minibatches):
                    sel = slice(k * size, (k + 1) * size) if order is None else order[k * size:(k + 1) * size]
                    y = bootstrap_targets(p.nets, returns[sel], coef[sel], boot[sel])
                    metrics = ddpg_update(p.nets, obs[sel], actions[sel], y, pc.tau,
                                          pc.max_grad_norm if pc.clip_grad_norm else None)
            metrics["action_std"] = b.actions.std()
            metrics["reward_mean"] = b.rewards.mean()
            out[p.tag] = metrics
        return out

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self, deterministic: bool = True, num_episodes: int = 1) -> dict[str, dict[str, np.ndarray]]:
        """One episode per env (``num_episodes`` must be 1) with the current actors, no training.

        ``deterministic``: actions ``mu(s)``; else with the OU noise of the config.

        Returns ``{tag: {"episode_return": (E,), "episode_length": (E,)}}`` (return summed over
        steps, averaged over the policy's agents). Training afterwards starts from fresh episodes.
        """
        if num_episodes != 1:
            raise ConfigError(f"num_episodes={num_episodes}: TrainerDDPG.evaluate plays one episode per env")
        sums, steps = self._play_one_episode(scale=0.0 if deterministic else None)
        return {tag: {"episode_return": sums[tag].mean(1), "episode_length": steps[tag]} for tag in sums}

    def evaluate_episodes(self, **sample_params: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """2.7.1's evaluator: one episode per env; ``scale=0`` (or ``use_argmax=True``) plays ``mu(s)``.

        Returns ``({tag: (E, A_p) returns}, {tag: (E,) lengths})``.
        """
        unknown = set(sample_params) - {"damping", "stddev", "scale", "use_argmax"}
        if unknown:
            raise ConfigError(f"unknown sample parameter(s) {sorted(unknown)}; DDPG takes damping, stddev, scale, use_argmax")
        scale = sample_params.get("scale")
        if sample_params.get("use_argmax"):
            scale = 0.0
        return self._play_one_episode(scale=scale, damping=sample_params.get("damping"), stddev=sample_params.get("stddev"))

    @torch.no_grad()
    def _play_one_episode(self, scale: float | None = None, damping: float | None = None,
                          stddev: float | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        from warp_drive.env.constants import Constants

        noise = self.noise_params()
        for k, v in (("scale", scale), ("damping", damping), ("stddev", stddev)):
            if v is not None:
                noise[k] = float(v)
        dm, E = self.dm, self.env_wrapper.n_envs
        self.env_wrapper.reset_all_envs()
        running = torch.ones(E, dtype=torch.bool, device=self.device)
        sums = {tag: torch.zeros((E, p.num_agents), device=self.device) for tag, p in self.policies.items()}
        lengths = torch.zeros(E, device=self.device)
        for t in range(self.env_wrapper.episode_length):
            self._act(noise)
            self.env_wrapper.step_all_envs()
            rewards = dm.data_on_device_via_torch(Constants.REWARDS)
            for tag, p in self.policies.items():
                sums[tag] += torch.where(running[:, None], p.select(rewards), 0.0)
            lengths += running.float()
            running &= dm.data_on_device_via_torch(Constants.DONE) == 0
            self.env_wrapper.reset_only_done_envs()
            if t % 64 == 63 and not bool(running.any()):
                break
        self.started = False  # training continues from fresh episodes
        return ({tag: s.cpu().numpy() for tag, s in sums.items()},
                {tag: lengths.cpu().numpy() for tag in sums})

    def _add_test_metrics(self, update_metrics: dict[str, dict[str, Tensor]]) -> None:
        returns, lengths = self.evaluate_episodes(scale=0)
        self.restart_episodes()
        for tag in self.policies:
            m = update_metrics.setdefault(tag, {})
            m["test_episode_return_mean"] = torch.tensor(float(returns[tag].sum(1).mean()), device=self.device)
            m["test_episode_length_mean"] = torch.tensor(float(lengths[tag].mean()), device=self.device)

    # ------------------------------------------------------------------ metrics, checkpoints
    def log_metrics(self, update_metrics: dict[str, dict[str, Tensor]]) -> dict[str, float]:
        """Collect metrics (one host sync), write them, return them as floats."""
        metrics = super().log_metrics(update_metrics)
        for tag, p in self.policies.items():
            metrics[f"{tag}/lr_critic"] = p.critic_lr_schedule.get_param_value(p.timestep)
        if self.verbose and self.rank == 0:
            logger.info("iteration %d: %s", self.iteration,
                        ", ".join(f"{k}={v:.4g}" for k, v in metrics.items() if not k.startswith("perf/")))
        return metrics

    def save_model_checkpoint(self, iteration: int = 0) -> list[Path]:
        """2.7.1's files ``<save_dir>/<tag>_actor_<timestep>.state_dict`` and ``..._critic_...``.

        Written on rank 0 when ``iteration % saving.model_params_save_freq == 0`` or on the last
        iteration. Returns the files written.
        """
        from warp_drive.training.checkpoint import atomic_save

        freq = self.config.saving.model_params_save_freq
        if self.rank != 0 or not (iteration % freq == 0 or iteration in (self.num_iters - 1, self.num_iters)):
            return []
        paths = []
        for tag, p in self.policies.items():
            for role, net in (("actor", p.nets.actor), ("critic", p.nets.critic)):
                path = Path(self.save_dir) / f"{tag}_{role}_{p.timestep}.state_dict"
                atomic_save({k: v.detach().cpu() for k, v in net.state_dict().items()}, path)
                paths.append(path)
                logger.info("policy weights written: %s", path)
        return paths

    def load_model_checkpoint(self, ckpts_dict: Mapping[str, Mapping[str, str | Path]] | None = None) -> None:
        """Load actor and critic weights: ``{tag: {"actor": path, "critic": path}}``, or (None) each
        policy's ``model.model_ckpt_filepath``. The targets are set to the loaded weights.

        As in 2.7.1 the policy's timestep is taken from the file names
        (``<tag>_actor_<timestep>.state_dict``), which must agree for actor and critic.

        Raises:
            ConfigError: unknown tag, a missing or unfitting file, or different timesteps.
        """
        from warp_drive.training import checkpoint as ckpt

        for tag, paths in self._files_to_load(ckpts_dict, "{'actor': path, 'critic': path}").items():
            if not isinstance(paths, Mapping) or set(paths) - set(ROLES):
                raise ConfigError(f"checkpoint of DDPG policy {tag!r} must be {{'actor': path, 'critic': path}}; got {paths!r}")
            p = self.policies[tag]
            steps = {}
            for role in ROLES:
                path = paths.get(role) or ""
                if not path:
                    continue
                state = ckpt.load_state_dict_file(path, self.device)
                net = getattr(p.nets, role)
                net = getattr(net, "module", net)
                try:
                    net.load_state_dict(state)
                except RuntimeError as err:
                    raise ConfigError(f"{path} does not fit the {role} of policy '{tag}' ({type(net).__name__}): {err}") from err
                hard_update(getattr(p.nets, f"target_{role}"), net)
                steps[role] = ckpt.timestep_from_filename(path)
                logger.info("policy '%s' %s loaded from %s", tag, role, path)
            if len(steps) == 2 and steps["actor"] != steps["critic"]:
                raise ConfigError(f"policy '{tag}': the actor file is at timestep {steps['actor']} and the critic file at "
                                  f"{steps['critic']}; load files saved together")
            found = [s for s in steps.values() if s is not None]
            if found:
                p.timestep = found[0]

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Full state (networks, targets, optimizers, OU states, counters, RNG, env replicas) to resume."""
        from warp_drive.training.checkpoint import atomic_save

        path = Path(path) if path else Path(self.save_dir) / f"checkpoint_{self.iteration:08d}.pt"
        state = {
            "format": "ddpg-1", "iteration": self.iteration, "seed": self.seed, "config": self.config.to_dict(),
            "policies": {tag: {"nets": {k: getattr(getattr(p.nets, k), "module", getattr(p.nets, k)).state_dict()
                                        for k in ("actor", "critic", "target_actor", "target_critic",
                                                  "actor_optimizer", "critic_optimizer")},
                               "ou": p.ou.state.cpu(), "timestep": p.timestep,
                               "episode_carry": (p.stats.running_return.cpu(), p.stats.running_length.cpu())}
                         for tag, p in self.policies.items()},
            "generator": self.generator.get_state(),
            "data_store": self.dm.state_dict(), "env_resetter": self.env_wrapper.env_resetter.state_dict(),
            "started": self.started, "perf": dict(self.perf),
        }
        atomic_save(state, path)
        return path

    def load_checkpoint(self, path: str | Path, state: Mapping[str, Any] | None = None) -> None:
        """Restore :meth:`save_checkpoint` output (same policies and shapes); ``state``: the file's
        contents, if the caller already read them."""
        from warp_drive.training.checkpoint import safe_load

        path = Path(path)
        if state is None:
            if not path.is_file():
                raise ConfigError(f"checkpoint {str(path)!r} does not exist")
            state = safe_load(path, map_location=self.device)
        if state.get("format") != "ddpg-1":
            raise ConfigError(f"{path} is not a TrainerDDPG checkpoint (format {state.get('format')!r})")
        if set(state["policies"]) != set(self.policies):
            raise ConfigError(f"checkpoint policies {sorted(state['policies'])} differ from the trainer's {sorted(self.policies)}")
        for tag, p in self.policies.items():
            s = state["policies"][tag]
            for k, v in s["nets"].items():
                obj = getattr(p.nets, k)
                getattr(obj, "module", obj).load_state_dict(v)
            p.ou.state.copy_(s["ou"])
            p.timestep = int(s["timestep"])
            p.stats.running_return.copy_(s["episode_carry"][0])
            p.stats.running_length.copy_(s["episode_carry"][1])
        self.generator.set_state(state["generator"].cpu())
        self.dm.load_state_dict(state["data_store"])
        self.env_wrapper.env_resetter.load_state_dict(state["env_resetter"])
        self.counters.load(state["iteration"], state["perf"])
        self.started = bool(state["started"])

    # ------------------------------------------------------------------ 2.7.1 attribute names (and EngineBase's)
    def _networks(self, role: str) -> dict[str, nn.Module]:
        return {tag: getattr(p.nets, role) for tag, p in self.policies.items()}

    actor_models = property(lambda self: self._networks("actor"), doc="``{tag: actor}``")
    critic_models = property(lambda self: self._networks("critic"), doc="``{tag: critic}``")
    target_actor_models = property(lambda self: self._networks("target_actor"), doc="``{tag: target actor}``")
    target_critic_models = property(lambda self: self._networks("target_critic"), doc="``{tag: target critic}``")
