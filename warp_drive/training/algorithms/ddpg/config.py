"""The ``policy.<tag>`` section of a DDPG policy (2.7.1's ``algorithm: DDPG``) and its OU-noise params
(moved from ``warp_drive.config.ddpg``, which re-exports it).

A DDPG policy section has 2.7.1's keys::

    algorithm: DDPG
    gamma: 0.99
    tau: 0.05                       # soft target update rate
    lr: {actor: 0.001, critic: 0.0001}    # or one number for both; each may be [[t, v], ...]
    clip_grad_norm: true
    max_grad_norm: 3
    model:
      actor:  {type: fully_connected_actor, fc_dims: [64, 64], output_w: 2.0, output_b: 0.0}
      critic: {type: fully_connected_action_value_critic, fc_dims: [64, 64]}
      model_ckpt_filepath: {actor: "", critic: ""}

``trainer.n_step`` sets the n-step targets (:func:`parse_trainer_params`, the registry entry's
``trainer_parser``), ``sampler.params.damping / stddev / scale`` the Ornstein-Uhlenbeck exploration
noise (numbers or schedules, :func:`parse_ou_params`). Every key is checked (unknown keys
get a did-you-mean error); the A2C/PPO keys that 2.7.1's merged defaults put in every policy
(``vf_loss_coeff``, ``entropy_coeff``, ``clip_param``) are accepted and have no effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from warp_drive.utils import checks as chk
from warp_drive.config.model import ActorCriticModelConfig
from warp_drive.errors import ConfigError

#: Defaults of a DDPG policy section (2.7.1's values where it had one).
DDPG_POLICY_DEFAULTS: dict[str, Any] = {
    "to_train": False,
    "algorithm": "DDPG",
    "gamma": 0.98,
    "tau": 0.05,
    "lr": 0.0001,
    "clip_grad_norm": True,
    "max_grad_norm": 0.5,
    "normalize_advantage": False,
    "normalize_return": False,
    "num_epochs": 1,
    "num_minibatches": 1,
    "model": None,
    "vf_loss_coeff": None,
    "entropy_coeff": None,
    "clip_param": None,
}
ACTOR_DEFAULTS: dict[str, Any] = {"type": "fully_connected_actor", "fc_dims": [64, 64], "init_method": "default",
                                  "output_w": None, "output_b": None, "kwargs": {}, "model_ckpt_filepath": ""}
CRITIC_DEFAULTS: dict[str, Any] = {"type": "fully_connected_action_value_critic", "fc_dims": [64, 64],
                                   "init_method": "default", "kwargs": {}, "model_ckpt_filepath": ""}
#: 2.7.1 ``sampler.params`` that drive the Ornstein-Uhlenbeck exploration noise of DDPG policies.
OU_NOISE_PARAMS = ("damping", "stddev", "scale")
#: 2.7.1's OU-noise defaults (its Numba sampler's).
OU_DEFAULTS: dict[str, float] = {"damping": 0.15, "stddev": 0.2, "scale": 1.0}


class DDPGModelConfig(ActorCriticModelConfig):
    """``policy.<tag>.model`` of a DDPG policy (``type`` defaults to ``fully_connected_actor`` and
    ``fully_connected_action_value_critic``)."""

    ALGORITHM = "DDPG"
    DEFAULTS = {"actor": ACTOR_DEFAULTS, "critic": CRITIC_DEFAULTS}

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str) -> DDPGModelConfig:
        """Parses 2.7.1's ``{actor, critic, model_ckpt_filepath}`` layout.

        A model section without ``actor``/``critic`` (2.7.1 then used it for both networks) is
        accepted: each role gets it, with its own default ``type``.
        """
        section = chk.require_mapping(section, prefix)
        if "actor" in section or "critic" in section:
            return super().from_dict(section, prefix)
        actor_raw = {k: v for k, v in section.items() if k != "model_ckpt_filepath"}
        if "type" in actor_raw:
            raise ConfigError(
                f"`{chk.join_key(prefix, 'type')}`={chk.brief(actor_raw['type'])}: a DDPG policy has two networks; "
                f"write `{prefix}.actor.type` and `{prefix}.critic.type` (defaults: fully_connected_actor, "
                "fully_connected_action_value_critic).")
        critic_raw = {k: v for k, v in actor_raw.items() if k not in ("output_w", "output_b")}
        return cls.from_networks({"actor": actor_raw, "critic": critic_raw}, section.get("model_ckpt_filepath"), prefix)


@dataclass(frozen=True)
class DDPGPolicyConfig:
    """One DDPG ``policy.<tag>`` section (see the module docstring).

    Attributes:
        lr: ``{"actor": schedule, "critic": schedule}`` (a float or ``((t, v), ...)``).
        tau: share of the online weights mixed into the targets after every gradient step.
        num_epochs, num_minibatches: gradient steps per iteration = epochs x minibatches over the
            rollout (1 x 1 = 2.7.1: one step per rollout).
        normalize_advantage: accepted (2.7.1 only logged normalized advantages for DDPG).
    """

    #: the keys a section (and a ``policy.<tag>.*`` override) may set, with their defaults
    DEFAULTS: ClassVar[Mapping[str, Any]] = {
        **DDPG_POLICY_DEFAULTS, "model": {"actor": ACTOR_DEFAULTS, "critic": CRITIC_DEFAULTS,
                                          "model_ckpt_filepath": {"actor": "", "critic": ""}}}

    to_train: bool
    algorithm: str
    gamma: float
    tau: float
    lr: dict[str, Any]
    clip_grad_norm: bool
    max_grad_norm: float
    normalize_advantage: bool
    normalize_return: bool
    num_epochs: int
    num_minibatches: int
    model: DDPGModelConfig

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "policy") -> DDPGPolicyConfig:
        d = chk.merged_section(section, DDPG_POLICY_DEFAULTS, prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        gamma = chk.as_unit_interval(d["gamma"], key("gamma"), "(e.g. 0.99)")
        tau = chk.as_unit_interval(d["tau"], key("tau"), "(2.7.1 used 0.05)")
        roles = DDPGModelConfig.ROLES
        lr = chk.as_schedules(d["lr"], key("lr"), roles, roles, "{actor: 0.001, critic: 0.0001}")
        if chk.as_bool(d["normalize_return"], key("normalize_return")):
            raise ConfigError(
                f"`{key('normalize_return')}`=true is not supported for DDPG: the critic learns Q in reward "
                "units (2.7.1 standardized the targets per step, which changes what Q means). Set it to false.")
        for name in ("vf_loss_coeff", "entropy_coeff", "clip_param"):  # checked, then unused
            if d[name] is not None:
                chk.as_schedule(d[name], key(name), positive_number=False)
        return cls(
            **{k: chk.as_bool(d[k], key(k)) for k in ("to_train", "clip_grad_norm", "normalize_advantage")},
            algorithm="DDPG",
            gamma=gamma,
            tau=tau,
            lr=lr,
            max_grad_norm=chk.as_positive(d["max_grad_norm"], key("max_grad_norm")),
            normalize_return=False,
            **dict(zip(("num_epochs", "num_minibatches"), chk.as_update_steps(d["num_epochs"], d["num_minibatches"], prefix))),
            model=DDPGModelConfig.from_dict(d["model"], key("model")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {**chk.to_plain(self), "model": self.model.to_dict()}


def parse_ou_params(params: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """``sampler.params.damping / stddev / scale`` given by the user (numbers or schedules)."""
    out = {}
    for name in OU_DEFAULTS:
        if name in params:
            value = chk.as_schedule(params[name], f"{prefix}.{name}", positive_number=False)
            if name == "damping" and isinstance(value, float) and not 0.0 <= value <= 1.0:
                raise ConfigError(f"`{prefix}.damping`={value} must lie in [0, 1] (2.7.1: 0.15).")
            out[name] = value
    return out


#: ``trainer.n_step`` when the config leaves it out (2.7.1's 1: one-step targets)
N_STEP_DEFAULT = 1


def parse_trainer_params(section: Any, prefix: str) -> dict[str, Any]:
    """``{"n_step": n}`` when the ``trainer`` section sets ``n_step`` to other than :data:`N_STEP_DEFAULT`
    (the n-step horizon of the targets), else {}."""
    if not isinstance(section, Mapping) or section.get("n_step") is None:
        return {}
    n = chk.as_int(section["n_step"], chk.join_key(prefix, "n_step"), minimum=1)
    return {} if n == N_STEP_DEFAULT else {"n_step": n}
