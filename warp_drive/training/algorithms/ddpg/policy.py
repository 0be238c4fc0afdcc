"""The DDPG policy (2.7.1's ``TrainerDDPG`` algorithm) behind the algorithm seam.

Each iteration trains on the steps it just collected, as 2.7.1 does: ``num_epochs x
num_minibatches`` gradient steps (1 x 1 = 2.7.1) over the rollout's n-step targets
(:mod:`warp_drive.training.algorithms.ddpg.parts` has the formulas). The actor acts with
Ornstein-Uhlenbeck noise (``sampler.params.damping / stddev / scale``, numbers or schedules
evaluated at the policy's timestep); greedy acting (``sampler.params.use_argmax``, evaluation)
plays ``mu(s)``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from warp_drive.training.algorithms.ddpg.config import N_STEP_DEFAULT, OU_DEFAULTS
from warp_drive.vocab.constants import Constants
from warp_drive.errors import ConfigError, DataShapeError
from warp_drive.training.algorithms.base import BuildContext, Policy, UpdateContext
from warp_drive.training.algorithms.ddpg.parts import DDPGNets, OUNoise, bootstrap_targets, ddpg_update, hard_update, nstep_returns
from warp_drive.training.algorithms.transitions import TransitionBuffers
from warp_drive.training.buffers import record_row
from warp_drive.training.distributed import unwrap
from warp_drive.training.models.action_spec import ActionSpec, action_heads_from_space, obs_dims_from_space
from warp_drive.training.policy_state import EpisodeStats
from warp_drive.training.utils.param_scheduler import ParamScheduler, set_optimizer_lr

Tensor = torch.Tensor
#: every network and optimizer a checkpoint holds
NETS = ("actor", "critic", "target_actor", "target_critic", "actor_optimizer", "critic_optimizer")


@dataclass
class NStepTargets:
    """The n-step parts of every step's target: ``returns (B, E, A)``, bootstrap step ``last
    (B, E)`` and coefficient ``coef (B, E)`` (:func:`~.parts.nstep_returns`)."""

    returns: Tensor
    last: Tensor
    coef: Tensor


@dataclass
class DDPGPolicy(Policy):
    """Everything the engine keeps for one DDPG policy tag."""

    records_next_obs: ClassVar[bool] = True

    tag: str
    agent_ids: list[int]
    agent_index: Tensor
    contiguous_all: bool
    nets: DDPGNets
    config: Any
    to_train: bool
    action_spec: ActionSpec
    actor_lr_schedule: Any
    critic_lr_schedule: Any
    noise_schedules: dict[str, Any]
    ou: OUNoise
    n_step: int
    buffers: TransitionBuffers | None = None
    targets: NStepTargets | None = None
    stats: EpisodeStats | None = None
    timestep: int = 0
    obs_agents_last: bool = False
    action_name: str = Constants.ACTIONS

    @property
    def model(self) -> nn.Module:
        """The actor (what acts in the env)."""
        return self.nets.actor

    @property
    def lr_schedule(self) -> Any:
        """The actor's learning-rate schedule (the ``<tag>/lr`` metric)."""
        return self.actor_lr_schedule

    # ------------------------------------------------------------------ acting
    def act(self, outputs: Tensor, greedy: bool) -> Tensor:
        """``mu(s)`` plus the OU noise (``mu(s)`` itself when greedy or ``scale`` is 0)."""
        if greedy:
            return outputs
        noise = {k: s.get_param_value(self.timestep) for k, s in self.noise_schedules.items()}
        return self.ou.perturb(outputs, noise["damping"], noise["stddev"], noise["scale"])

    def record_next_obs(self, step: int, obs: Tensor) -> None:
        record_row(self.buffers.next_obs, step, obs)

    # ------------------------------------------------------------------ learning
    @torch.no_grad()
    def finalize(self, last_values: Any, bootstrap: bool) -> None:
        """The n-step returns, bootstrap steps and coefficients of the rollout."""
        b = self.buffers
        R, last, coef = nstep_returns(b.rewards, b.terminated, b.truncated, self.config.gamma, self.n_step)
        self.targets.returns.copy_(R)
        self.targets.last.copy_(last)
        self.targets.coef.copy_(coef)

    def batch(self) -> dict[str, Tensor]:
        """Rows of every (step, env, agent): obs, bootstrap obs ``(n, *obs)``, actions ``(n, d)``,
        n-step returns and coefficients ``(n,)``."""
        b, tg = self.buffers, self.targets
        B, E = tg.last.shape
        env = torch.arange(E, device=tg.last.device)[None, :].expand(B, E)
        obs_shape = b.obs.shape[3:]
        return {"obs": b.obs.reshape(-1, *obs_shape), "boot_obs": b.next_obs[tg.last, env].reshape(-1, *obs_shape),
                "actions": b.actions.reshape(-1, b.actions.shape[-1]), "returns": tg.returns.reshape(-1),
                "coef": tg.coef[..., None].expand_as(tg.returns).reshape(-1)}

    def update(self, batch: Mapping[str, Tensor], context: UpdateContext) -> dict[str, Tensor]:
        """``num_epochs x num_minibatches`` DDPG steps on the rollout."""
        pc, nets = self.config, self.nets
        set_optimizer_lr(nets.actor_optimizer, self.actor_lr_schedule.get_param_value(self.timestep))
        set_optimizer_lr(nets.critic_optimizer, self.critic_lr_schedule.get_param_value(self.timestep))
        actor_opt = context.optimizer(nets.actor_optimizer, "actor")
        critic_opt = context.optimizer(nets.critic_optimizer, "critic")
        n = batch["obs"].shape[0]
        size = n // pc.num_minibatches
        metrics: dict[str, Tensor] = {}
        for _ in range(pc.num_epochs):
            order = torch.randperm(n, device=batch["obs"].device, generator=context.generator) if pc.num_minibatches > 1 else None
            for k in range(pc.num_minibatches):
                sel = slice(k * size, (k + 1) * size) if order is None else order[k * size:(k + 1) * size]
                y = bootstrap_targets(nets, batch["returns"][sel], batch["coef"][sel], batch["boot_obs"][sel])
                metrics = ddpg_update(nets, batch["obs"][sel], batch["actions"][sel], y, pc.tau,
                                      pc.max_grad_norm if pc.clip_grad_norm else None, actor_optimizer=actor_opt,
                                      critic_optimizer=critic_opt, backward=context.backward,
                                      clip_gradients=context.clip_gradients)
        metrics["action_std"] = self.buffers.actions.std()
        metrics["reward_mean"] = self.buffers.rewards.mean()
        return metrics

    def use_local_gradients(self) -> None:
        self.nets.train_actor, self.nets.train_critic = self.nets.actor, self.nets.critic

    def optimizers(self) -> dict[str, Any]:
        return {"actor": self.nets.actor_optimizer, "critic": self.nets.critic_optimizer}

    def learning_rates(self) -> dict[str, float]:
        """The actor's as ``<tag>/lr``, the critic's as ``<tag>/lr_critic``."""
        return {"": self.actor_lr_schedule.get_param_value(self.timestep),
                "_critic": self.critic_lr_schedule.get_param_value(self.timestep)}

    # ------------------------------------------------------------------ state and files
    def state_dict(self) -> dict[str, Any]:
        """``{model (the actor), nets: {critic, targets, optimizers}, algorithm: {ou}, timestep, agent_ids}``."""
        nets = {k: unwrap(getattr(self.nets, k)).state_dict() for k in NETS}
        return {"model": nets.pop("actor"), "nets": nets, "algorithm": {"ou": self.ou.state.clone()},
                "timestep": self.timestep, "agent_ids": self.agent_ids}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        unwrap(self.nets.actor).load_state_dict(state["model"])
        for k, v in state["nets"].items():
            if k not in NETS:
                raise KeyError(f"unknown DDPG network {k!r}")
            unwrap(getattr(self.nets, k)).load_state_dict(v)
        self.ou.state.copy_(state["algorithm"]["ou"])
        self.timestep = int(state["timestep"])

    def weight_files(self) -> dict[str, nn.Module]:
        return {"actor": self.nets.actor, "critic": self.nets.critic}

    def load_weights(self, role: str, state: Mapping[str, Tensor]) -> None:
        """Loads the actor or the critic; its target network is set to the loaded weights."""
        net = unwrap(getattr(self.nets, role))
        net.load_state_dict(state)
        hard_update(getattr(self.nets, f"target_{role}"), net)


def build_policy(ctx: BuildContext) -> DDPGPolicy:
    """A DDPG policy: actor and critic (``policy.<tag>.model.actor / critic``), their targets, two
    Adam optimizers, the OU noise state (E, A, d), the transition rows and n-step targets.

    Raises:
        ConfigError: the agents do not have Box actions.
        DataShapeError: no single ``observations`` placeholder, or the action placeholder's
            columns differ from the action dimension.
    """
    dm, pc, device = ctx.data_manager, ctx.config, ctx.device
    if ctx.obs_names != [Constants.OBSERVATIONS]:
        raise DataShapeError("DDPG reads one `observations` placeholder (Box observations); this env has none")
    space = ctx.action_space()
    action_spec = action_heads_from_space(space)
    if not action_spec.is_gaussian:
        raise ConfigError(f"policy '{ctx.tag}': DDPG needs continuous (Box) actions; its agents have "
                          f"{type(space).__name__} actions. Use `algorithm: A2C` or PPO.")
    obs_dims = obs_dims_from_space(ctx.observation_space())
    actor = ctx.model_factory.build(pc.model.actor, obs_dims, action_spec, f"policy.{ctx.tag}.model.actor").to(device)
    critic = ctx.model_factory.build(pc.model.critic, obs_dims, action_spec, f"policy.{ctx.tag}.model.critic").to(device)
    lr_a = ParamScheduler(pc.lr["actor"], f"policy.{ctx.tag}.lr.actor")
    lr_c = ParamScheduler(pc.lr["critic"], f"policy.{ctx.tag}.lr.critic")
    nets = DDPGNets(actor, critic, copy.deepcopy(actor), copy.deepcopy(critic),
                    torch.optim.Adam(actor.parameters(), lr=lr_a.get_param_value(0)),
                    torch.optim.Adam(critic.parameters(), lr=lr_c.get_param_value(0)),
                    ctx.wrap_model(actor), ctx.wrap_model(critic))
    shape = dm.get_shape(Constants.ACTIONS)
    columns = shape[2] if len(shape) >= 3 else 1
    if columns != action_spec.gaussian_dim:
        raise DataShapeError(f"`{Constants.ACTIONS}` has {columns} columns but policy '{ctx.tag}' acts in "
                             f"{action_spec.gaussian_dim} dimensions")
    ou_given = ctx.run_config.sampler.ou_noise
    noise = {k: ParamScheduler(ou_given.get(k, v), f"sampler.params.{k}") for k, v in OU_DEFAULTS.items()}
    A = len(ctx.agent_ids)
    policy = DDPGPolicy(**Policy.common_state(ctx), nets=nets, action_spec=action_spec, actor_lr_schedule=lr_a,
                        critic_lr_schedule=lr_c, noise_schedules=noise,
                        ou=OUNoise((ctx.num_envs, A, columns), device, ctx.generator), n_step=ctx.run_config.trainer.algorithm_params.get("n_step", N_STEP_DEFAULT))
    B, E = ctx.steps_per_iter, ctx.num_envs
    policy.buffers = TransitionBuffers.allocate(B, ctx.observe(policy), columns)
    policy.targets = NStepTargets(torch.zeros((B, E, A), device=device), torch.zeros((B, E), dtype=torch.long, device=device),
                                  torch.zeros((B, E), device=device))
    return policy
