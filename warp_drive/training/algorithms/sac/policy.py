"""The SAC policy behind the algorithm seam (:class:`~warp_drive.training.algorithms.base.Policy`).

Per iteration the rollout runs the actor on every env (``forward``: ``(mean, log_std)``), and
:meth:`SACPolicy.act` draws squashed actions with the policy's generator (greedy: ``tanh(mean)``),
in env units; the observations right after each env step (before resets) go to ``next_obs``.
:meth:`SACPolicy.finalize` pushes the rollout's transitions into the device replay (actions
mapped back to the unit box; ``not_done`` = 0 after a termination, and after a time-limit
truncation unless the run bootstraps there). :meth:`SACPolicy.update` then takes
``gradient_steps`` (or ``replay_ratio`` x env steps) gradient steps on ``batch_size`` transitions
drawn from the replay (:func:`~warp_drive.training.algorithms.sac.update.sac_step`), once
``learning_starts`` env steps have been collected.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.algorithms.base import BuildContext, Policy, UpdateContext
from warp_drive.training.algorithms.sac.config import OPTIMIZERS
from warp_drive.training.algorithms.sac.replay import ReplayBuffer
from warp_drive.training.algorithms.sac.update import SACNets, StepHooks, StepSettings, TwinQ, sac_step
from warp_drive.training.algorithms.transitions import TransitionBuffers
from warp_drive.training.models.action_spec import ActionSpec, action_heads_from_space, obs_dims_from_space
from warp_drive.training.models.squashed_gaussian import ActionBounds, squashed_sample
from warp_drive.training.policy_state import EpisodeStats
from warp_drive.training.utils.param_scheduler import ParamScheduler, set_optimizer_lr

logger = logging.getLogger(__name__)

Tensor = torch.Tensor
#: the metrics of an update, in order (``grad_norm_*`` only when measured)
METRICS = ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean", "target_mean")


@dataclass
class SACPolicy(Policy):
    """Everything the engine keeps for one SAC policy tag (see the module docstring).

    Attributes besides :class:`Policy`'s: ``nets`` (:class:`SACNets`), ``optimizer_of``
    (``{"actor", "critic", "alpha"}`` -> Adam), ``lr_schedules`` (same keys), ``bounds`` (the
    Box's :class:`ActionBounds`), ``replay``, ``generator`` (action draws), ``target_entropy``,
    ``env_steps`` (env steps collected so far, all envs: what ``learning_starts`` counts).
    """

    samples_in_kernel: ClassVar[bool] = False
    records_next_obs: ClassVar[bool] = True

    tag: str
    agent_ids: list[int]
    agent_index: Tensor
    contiguous_all: bool
    config: Any
    to_train: bool
    nets: SACNets
    optimizer_of: dict[str, torch.optim.Optimizer]
    lr_schedules: dict[str, ParamScheduler]
    bounds: ActionBounds
    action_spec: ActionSpec
    generator: torch.Generator
    target_entropy: float
    action_name: str = Constants.ACTIONS
    timestep: int = 0
    env_steps: int = 0
    obs_agents_last: bool = False
    buffers: TransitionBuffers | None = None
    replay: ReplayBuffer | None = None
    stats: EpisodeStats | None = None
    noise: Tensor | None = None  # (E, A, d) standard normal draws behind sampled actions (noise_correlation)

    @property
    def model(self) -> nn.Module:  # type: ignore[override]
        """The actor: what acts in the env (its outputs are ``(mean, log_std)``)."""
        return self.nets.actor

    @property
    def lr_schedule(self) -> ParamScheduler:
        """The actor's learning-rate schedule (the ``<tag>/lr`` metric)."""
        return self.lr_schedules["actor"]

    # ------------------------------------------------------------------ acting
    def act(self, outputs: Any, greedy: bool) -> Tensor:
        """Actions (E, A, d) in env units from the actor's ``(mean, log_std)`` (E, A, d) each
        (``noise_correlation``: the draws follow the policy's AR(1) noise state)."""
        mean, log_std = outputs
        if greedy:
            return self.bounds.to_env(torch.tanh(mean.float()))
        rho = self.config.noise_correlation
        noise = None
        if rho > 0 and self.noise is not None and self.noise.shape == mean.shape:
            eps = torch.randn(mean.shape, generator=self.generator, device=mean.device)
            noise = self.noise.mul_(rho).add_(eps, alpha=math.sqrt(1.0 - rho * rho))
        y, _ = squashed_sample(mean, log_std, self.generator, noise=noise)
        return self.bounds.to_env(y)

    def record_next_obs(self, step: int, obs: Any) -> None:
        self.buffers.next_obs[step].copy_(obs)

    # ------------------------------------------------------------------ learning
    @torch.no_grad()
    def finalize(self, last_values: Any, bootstrap: bool) -> None:
        """Pushes the rollout's B x E x A transitions into the replay (see the module docstring)."""
        b = self.buffers
        flat = b.flat()
        ends = flat["terminated"] > 0
        if not bootstrap:
            ends = ends | flat["truncated"]
        self.replay.push({"obs": flat["obs"], "actions": self.bounds.to_unit(flat["actions"]), "rewards": flat["rewards"],
                          "next_obs": flat["next_obs"], "not_done": (~ends).float()})
        self.env_steps += int(b.rewards.shape[0] * b.rewards.shape[1])

    def batch(self) -> dict[str, Any]:
        """The rollout's rewards (B, E, A) and actions (B, E, A, d), for the metrics; the gradient
        steps draw from the replay."""
        return {"rewards": self.buffers.rewards, "actions": self.buffers.actions}

    def update(self, batch: Mapping[str, Any], context: UpdateContext) -> dict[str, Tensor]:
        """Gradient steps on replay draws (none before ``learning_starts``): the mean of every step's metrics."""
        pc = self.config
        for name, optimizer in self.optimizer_of.items():
            set_optimizer_lr(optimizer, self.lr_schedules[name].get_param_value(self.timestep))
        hooks = StepHooks({name: context.optimizer(own, name) for name, own in self.optimizer_of.items()},
                          backward=context.backward_of, clip=context.clip_gradients,
                          track_grad_norm=context.track_grad_norm, autocast_dtype=context.autocast_dtype)
        settings = StepSettings(pc.gamma, pc.tau, self.target_entropy, pc.alpha,
                                pc.max_grad_norm if pc.clip_grad_norm else None)
        if self.env_steps < pc.learning_starts or len(self.replay) == 0:
            out = self._idle_metrics(hooks)
        else:
            steps = pc.gradient_steps_for(context.env_steps)
            out = {}
            for _ in range(steps):
                m = sac_step(self.nets, self.replay.sample(pc.batch_size, context.generator), settings, hooks,
                             context.generator)
                for k, v in m.items():
                    out[k] = out[k] + v if k in out else v
            out = {k: v / steps for k, v in out.items()}
        if "rewards" in batch:
            out["reward_mean"] = batch["rewards"].mean()
        if "actions" in batch:
            out["action_std"] = batch["actions"].float().std()
        return out

    def _idle_metrics(self, hooks: StepHooks) -> dict[str, Tensor]:
        """The keys of an update's metrics before the first gradient step: zeros, the current alpha."""
        device = self.nets.log_alpha.device
        out = {k: torch.zeros((), device=device) for k in METRICS}
        out["alpha"] = self.nets.log_alpha.detach().exp() if self.config.alpha is None else out["alpha"] + self.config.alpha
        if hooks.clip is None or hooks.track_grad_norm:
            out.update(grad_norm_critic=torch.zeros((), device=device), grad_norm_actor=torch.zeros((), device=device))
        return out

    def optimizers(self) -> dict[str, Any]:
        return dict(self.optimizer_of)

    def learning_rates(self) -> dict[str, float]:
        """``{"": actor, "_critic": critic, "_alpha": temperature}`` learning rates at the current timestep."""
        return {("" if name == "actor" else f"_{name}"): s.get_param_value(self.timestep)
                for name, s in self.lr_schedules.items()}

    def use_local_gradients(self) -> None:
        """Gradient steps on the networks themselves, not their DDP wrappers (a driver syncs them)."""
        self.nets.train_actor, self.nets.train_critic = self.nets.actor, self.nets.critic

    # ------------------------------------------------------------------ state and files
    def state_dict(self) -> dict[str, Any]:
        """Networks, target critics, optimizers, ``log_alpha``, the replay (rows and position),
        ``timestep``, ``env_steps``, ``agent_ids`` and the exploration noise state."""
        n = self.nets
        return {"actor": n.actor.state_dict(), "critic": n.critic.state_dict(), "target_critic": n.target_critic.state_dict(),
                "log_alpha": n.log_alpha.detach().clone(),
                "optimizers": {k: o.state_dict() for k, o in self.optimizer_of.items()},
                "replay": self.replay.state_dict(), "timestep": self.timestep, "env_steps": self.env_steps,
                "agent_ids": list(self.agent_ids), "noise": None if self.noise is None else self.noise.clone()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        n = self.nets
        for name in ("actor", "critic", "target_critic"):
            getattr(n, name).load_state_dict(state[name])
        with torch.no_grad():
            n.log_alpha.copy_(state["log_alpha"])
        for k, o in self.optimizer_of.items():
            o.load_state_dict(state["optimizers"][k])
        self.replay.load_state_dict(state["replay"])
        self.timestep, self.env_steps = int(state["timestep"]), int(state["env_steps"])
        if self.noise is not None and state.get("noise") is not None:
            self.noise.copy_(state["noise"])

    def weight_files(self) -> dict[str, nn.Module]:
        """``<tag>_actor_<timestep>.state_dict`` and ``<tag>_critic_<timestep>.state_dict`` (both Q networks)."""
        return {"actor": self.nets.actor, "critic": self.nets.critic}

    def load_weights(self, role: str, state: Mapping[str, Tensor]) -> None:
        """Loads a weight file; the target critics follow the critics."""
        super().load_weights(role, state)
        if role == "critic":
            self.nets.target_critic.load_state_dict(self.nets.critic.state_dict())


def build_policy(ctx: BuildContext) -> SACPolicy:
    """A SAC policy: squashed Gaussian actor, twin critics and their targets, Adam for each and for
    the temperature, the rollout's transition rows and the replay (``policy.<tag>.buffer_size``).

    Raises:
        ConfigError: the agents' actions are not a bounded Box.
        DataShapeError: Dict observations, or an action placeholder of another width.
    """
    pc, dev, tag = ctx.config, ctx.device, ctx.tag
    space = ctx.action_space()
    spec = action_heads_from_space(space)
    if not spec.is_gaussian:
        raise ConfigError(f"policy '{tag}': SAC needs continuous (Box) actions; its agents have "
                          f"{type(space).__name__} actions. Use `algorithm: A2C` or PPO.")
    if ctx.obs_names != [Constants.OBSERVATIONS]:
        raise DataShapeError(f"policy '{tag}': SAC reads one `{Constants.OBSERVATIONS}` placeholder (Box observations); "
                             f"this env has {ctx.obs_names}")
    bounds = ActionBounds.from_space(space, dev)
    bounds.check_dim(spec.gaussian_dim)
    columns = ctx.data_manager.get_shape(Constants.ACTIONS)[2:]
    if tuple(columns) != (spec.gaussian_dim,):
        raise DataShapeError(f"`{Constants.ACTIONS}` has {tuple(columns)} columns per agent but policy '{tag}' acts in "
                             f"{spec.gaussian_dim} dimensions")
    obs_dims = obs_dims_from_space(ctx.observation_space())
    factory = ctx.model_factory
    actor = factory.build(pc.model.actor, obs_dims, spec, f"policy.{tag}.model.actor").to(dev)
    critic = TwinQ(*(factory.build(pc.model.critic, obs_dims, spec, f"policy.{tag}.model.critic") for _ in range(2))).to(dev)
    alpha0 = pc.initial_alpha if pc.alpha is None else max(pc.alpha, 1e-30)
    log_alpha = nn.Parameter(torch.tensor(math.log(alpha0), dtype=torch.float32, device=dev))
    nets = SACNets(actor, critic, copy.deepcopy(critic), log_alpha, ctx.wrap_model(actor), ctx.wrap_model(critic))
    schedules = {name: ParamScheduler(pc.lr[name], f"policy.{tag}.lr.{name}") for name in OPTIMIZERS}
    params = {"actor": actor.parameters(), "critic": critic.parameters(), "alpha": [log_alpha]}
    optimizers = {name: torch.optim.Adam(params[name], lr=schedules[name].get_param_value(0), foreach=True)
                  for name in OPTIMIZERS}
    target_entropy = -float(spec.gaussian_dim) if pc.target_entropy is None else pc.target_entropy
    policy = SACPolicy(**Policy.common_state(ctx), nets=nets, optimizer_of=optimizers, lr_schedules=schedules, bounds=bounds,
                       action_spec=spec, generator=ctx.generator, target_entropy=target_entropy)
    example = ctx.observe(policy)
    policy.buffers = TransitionBuffers.allocate(ctx.steps_per_iter, example, spec.gaussian_dim)
    policy.replay = ReplayBuffer(pc.buffer_size, tuple(example.shape[2:]), spec.gaussian_dim, dev, example.dtype)
    if pc.noise_correlation > 0:  # stationary from the start: N(0, 1) per (env, agent, dim)
        policy.noise = torch.randn((ctx.num_envs, len(ctx.agent_ids), spec.gaussian_dim), generator=ctx.generator, device=dev)
    logger.debug("SAC policy '%s': %d agents, replay of %d transitions", tag, len(ctx.agent_ids), pc.buffer_size)
    return policy
