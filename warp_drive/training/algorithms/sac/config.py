"""The ``policy.<tag>`` section of a SAC policy (``algorithm: SAC``).

Keys and defaults (stable-baselines3's SAC defaults where it has one)::

    algorithm: SAC
    to_train: true
    gamma: 0.99
    tau: 0.005                  # Polyak rate of the target critics, after every gradient step
    lr: 0.0003                  # or {actor: .., critic: .., alpha: ..}; each a number or [[t, v], ...]
    buffer_size: 1000000        # replay capacity in transitions (env steps x the policy's agents)
    batch_size: 256             # transitions per gradient step, drawn uniformly from the replay
    learning_starts: 100        # env steps (all envs) collected before the first gradient step
    gradient_steps: null        # gradient steps per iteration; null: replay_ratio x env steps
    replay_ratio: 1.0           # gradient steps per env step (all envs) when gradient_steps is null
    alpha: auto                 # entropy temperature: auto (learned) or a fixed number
    initial_alpha: 1.0          # the learned temperature's start
    target_entropy: auto        # auto: -action_dim (nats of the squashed action in the unit box)
    noise_correlation: 0.0      # AR(1) coefficient over env steps of the draws behind sampled actions
                                # (0: independent draws, standard SAC; near 1: slowly varying exploration)
    clip_grad_norm: false
    max_grad_norm: 10.0         # with clip_grad_norm: each network's gradient norm is clipped to this
    num_minibatches: 1          # fixed: SAC draws batch_size transitions per step (batch_size sets it)
    model:
      actor:  {type: squashed_gaussian_actor, fc_dims: [256, 256]}
      critic: {type: fully_connected_action_value_critic, fc_dims: [256, 256]}   # built twice (twin Q)
      model_ckpt_filepath: {actor: "", critic: ""}

Every key is checked; an error names the dotted key, the value and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from warp_drive.utils import checks as chk
from warp_drive.config.model import ActorCriticModelConfig
from warp_drive.errors import ConfigError

#: Defaults of a SAC policy section.
SAC_POLICY_DEFAULTS: dict[str, Any] = {
    "to_train": False,
    "algorithm": "SAC",
    "gamma": 0.99,
    "tau": 0.005,
    "lr": 0.0003,
    "buffer_size": 1_000_000,
    "batch_size": 256,
    "learning_starts": 100,
    "gradient_steps": None,
    "replay_ratio": 1.0,
    "alpha": "auto",
    "initial_alpha": 1.0,
    "target_entropy": "auto",
    "noise_correlation": 0.0,
    "clip_grad_norm": False,
    "max_grad_norm": 10.0,
    "num_minibatches": 1,
    "model": None,
}
#: Defaults of each network (keys of :class:`~warp_drive.config.model.ModelConfig`).
SAC_MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "actor": {"type": "squashed_gaussian_actor", "fc_dims": [256, 256], "init_method": "default",
              "output_w": None, "output_b": None, "kwargs": {}, "model_ckpt_filepath": ""},
    "critic": {"type": "fully_connected_action_value_critic", "fc_dims": [256, 256], "init_method": "default",
               "output_w": None, "output_b": None, "kwargs": {}, "model_ckpt_filepath": ""},
}
#: The optimizers of a SAC policy: one per network (SACModelConfig.ROLES) and the temperature's.
OPTIMIZERS = ("actor", "critic", "alpha")
#: The largest replay a config may ask for (transitions).
MAX_BUFFER_SIZE = 2**31 - 1


class SACModelConfig(ActorCriticModelConfig):
    """``policy.<tag>.model`` of a SAC policy (the critic config builds both Q networks)."""

    ALGORITHM = "SAC"
    DEFAULTS = SAC_MODEL_DEFAULTS


def _auto_or_number(value: Any, key: str, what: str) -> float | None:
    """None for ``"auto"`` (any case), else a finite number."""
    if isinstance(value, str):
        if value.lower() == "auto":
            return None
        raise ConfigError(f"`{key}`={chk.brief(value)} must be `auto` or a number ({what}).")
    return chk.as_float(value, key)


@dataclass(frozen=True)
class SACPolicyConfig:
    """One SAC ``policy.<tag>`` section (see the module docstring for the keys).

    Attributes:
        lr: ``{"actor": schedule, "critic": schedule, "alpha": schedule}`` (a float or ``((t, v), ...)``).
        gradient_steps: gradient steps per iteration, or None (``replay_ratio`` x env steps).
        alpha: the fixed temperature, or None (learned from ``initial_alpha`` towards ``target_entropy``).
        target_entropy: a number, or None (``-action_dim``).
        noise_correlation: ``rho`` in [0, 1): each env's standard normal draw behind a sampled action
            is ``z_t = rho z_(t-1) + sqrt(1 - rho^2) eps_t`` (still N(0, 1) at every step, so the
            policy and its log-probabilities are unchanged; correlated exploration as in colored-noise
            SAC, Eberhard et al. 2023); 0 draws independently (standard SAC).
    """

    #: the keys a section (and a ``policy.<tag>.*`` override) may set, with their defaults
    DEFAULTS: ClassVar[Mapping[str, Any]] = {**SAC_POLICY_DEFAULTS, "model": SAC_MODEL_DEFAULTS}

    to_train: bool
    algorithm: str
    gamma: float
    tau: float
    lr: dict[str, Any]
    buffer_size: int
    batch_size: int
    learning_starts: int
    gradient_steps: int | None
    replay_ratio: float
    alpha: float | None
    initial_alpha: float
    target_entropy: float | None
    noise_correlation: float
    clip_grad_norm: bool
    max_grad_norm: float
    num_minibatches: int
    model: SACModelConfig

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "policy") -> SACPolicyConfig:
        """Parses and checks a SAC section.

        Raises:
            ConfigError: an unknown key, a wrong type or an impossible value (naming the dotted key).
        """
        d = chk.merged_section(section, SAC_POLICY_DEFAULTS, prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        algorithm = chk.as_str(d["algorithm"], key("algorithm"))
        if algorithm.upper() != "SAC":
            raise ConfigError(f"`{key('algorithm')}`={chk.brief(algorithm)}: this section parser reads SAC sections only.")
        gamma = chk.as_unit_interval(d["gamma"], key("gamma"), "(e.g. 0.99)")
        tau = chk.as_unit_interval(d["tau"], key("tau"), "(e.g. 0.005)")
        ratio = chk.as_positive(d["replay_ratio"], key("replay_ratio"))
        steps = d["gradient_steps"]
        steps = None if steps is None else chk.as_int(steps, key("gradient_steps"), minimum=1, maximum=10**7)
        alpha = _auto_or_number(d["alpha"], key("alpha"), "a fixed entropy temperature >= 0, or auto to learn it")
        if alpha is not None and alpha < 0:
            raise ConfigError(f"`{key('alpha')}`={alpha} must be >= 0 (0: no entropy bonus), or auto.")
        rho = chk.as_float(d["noise_correlation"], key("noise_correlation"))
        if not 0.0 <= rho < 1.0:
            raise ConfigError(f"`{key('noise_correlation')}`={rho} is out of range; expected 0 <= rho < 1 "
                              "(0: independent draws; e.g. 0.9 for exploration that varies over about 10 steps).")
        lr = chk.as_schedules(d["lr"], key("lr"), OPTIMIZERS, SACModelConfig.ROLES,
                              "{actor: 0.0003, critic: 0.0003} (alpha optional, default: the critic's)")
        lr.setdefault("alpha", lr["critic"])
        minibatches = chk.as_int(d["num_minibatches"], key("num_minibatches"), minimum=1)
        if minibatches != 1:
            raise ConfigError(f"`{key('num_minibatches')}`={minibatches}: SAC draws `batch_size` transitions from its "
                              f"replay per gradient step; remove `num_minibatches` and set `{key('batch_size')}` instead.")
        return cls(
            to_train=chk.as_bool(d["to_train"], key("to_train")),
            algorithm="SAC",
            gamma=gamma,
            tau=tau,
            lr=lr,
            buffer_size=chk.as_int(d["buffer_size"], key("buffer_size"), minimum=1, maximum=MAX_BUFFER_SIZE),
            batch_size=chk.as_int(d["batch_size"], key("batch_size"), minimum=1, maximum=2**24),
            learning_starts=chk.as_int(d["learning_starts"], key("learning_starts"), minimum=0),
            gradient_steps=steps,
            replay_ratio=ratio,
            alpha=alpha,
            initial_alpha=chk.as_positive(d["initial_alpha"], key("initial_alpha")),
            target_entropy=_auto_or_number(d["target_entropy"], key("target_entropy"),
                                           "nats; auto = -action_dim"),
            noise_correlation=rho,
            clip_grad_norm=chk.as_bool(d["clip_grad_norm"], key("clip_grad_norm")),
            max_grad_norm=chk.as_positive(d["max_grad_norm"], key("max_grad_norm")),
            num_minibatches=1,
            model=SACModelConfig.from_dict(d["model"], key("model")),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (accepted by ``from_dict``)."""
        auto = lambda v: "auto" if v is None else v  # noqa: E731
        return {"to_train": self.to_train, "algorithm": "SAC", "gamma": self.gamma, "tau": self.tau,
                "lr": {r: chk.schedule_to_plain(v) for r, v in self.lr.items()}, "buffer_size": self.buffer_size,
                "batch_size": self.batch_size, "learning_starts": self.learning_starts,
                "gradient_steps": self.gradient_steps, "replay_ratio": self.replay_ratio, "alpha": auto(self.alpha),
                "initial_alpha": self.initial_alpha, "target_entropy": auto(self.target_entropy),
                "noise_correlation": self.noise_correlation,
                "clip_grad_norm": self.clip_grad_norm, "max_grad_norm": self.max_grad_norm,
                "num_minibatches": self.num_minibatches, "model": self.model.to_dict()}

    def gradient_steps_for(self, env_steps: int) -> int:
        """Gradient steps after an iteration of ``env_steps`` env steps (all envs): at least 1."""
        if self.gradient_steps is not None:
            return self.gradient_steps
        return max(1, round(self.replay_ratio * int(env_steps)))
