"""Run configuration: frozen dataclasses parsed and validated by hand-written ``from_dict``.

The YAML shape is WarpDrive 2.x's (``name``, ``env``, ``trainer``, ``policy.<tag>``, ``saving``,
optional ``sampler``), so the reference run configs load unchanged. ``from_dict``

1. rejects unknown keys with a "did you mean" hint naming the dotted key,
2. fills missing keys from ``defaults.yaml``,
3. validates types, ranges and divisibility once, raising :class:`ConfigError`,
4. exposes derived values as read-only properties (the config is never mutated).

``to_dict`` returns plain Python data that ``from_dict`` accepts again (round trip).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from warp_drive.config import _checks as chk
from warp_drive.config._yaml import load_defaults
from warp_drive.config.algorithms import algorithm_entry, algorithm_names
from warp_drive.config.ddpg import parse_ou_params
from warp_drive.config.model import ModelConfig
from warp_drive.env.backends import BACKENDS, canonical_backend, is_numba
from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

#: the algorithms this section class parses (the others have their own: :mod:`warp_drive.config.algorithms`)
ALGORITHMS = ("A2C", "PPO")
ENV_BACKENDS = BACKENDS
#: 2.7.1 ``sampler.params`` that drive the Ornstein-Uhlenbeck exploration noise of DDPG policies.
OU_NOISE_PARAMS = ("damping", "stddev", "scale")
#: num_epochs used when the config leaves it null.
DEFAULT_NUM_EPOCHS = {"A2C": 1, "PPO": 4}
#: ``trainer.update_precision`` values.
UPDATE_PRECISIONS = ("fp32", "bf16")


def _precision(value: Any, key: str) -> str:
    name = chk.as_str(value, key).lower()
    if name not in UPDATE_PRECISIONS:
        raise ConfigError(f"`{key}`={chk.brief(value)} is not a precision; use one of {', '.join(UPDATE_PRECISIONS)}")
    return name


def _periodic_eval(d: Mapping[str, Any], key: Any) -> dict[str, Any]:
    """``eval_every``, ``eval_episodes`` and ``keep_best`` of the trainer section, checked together."""
    every = chk.as_int(d["eval_every"], key("eval_every"), minimum=0)
    keep_best = chk.as_bool(d["keep_best"], key("keep_best"))
    if keep_best and every == 0:
        raise ConfigError(f"`{key('keep_best')}`=true keeps the best of the periodic evaluations, but "
                          f"`{key('eval_every')}` is 0 (none); set `{key('eval_every')}` to e.g. 10 iterations")
    return {"eval_every": every, "eval_episodes": chk.as_int(d["eval_episodes"], key("eval_episodes"), minimum=1,
                                                             maximum=1_000_000),
            "keep_best": keep_best}


@dataclass(frozen=True)
class TrainerConfig(chk.PlainDict):
    """The ``trainer`` section.

    Attributes:
        num_gpus: Number of GPUs (one process each).
        num_envs: Env replicas E.
        num_episodes: Episodes to train for in total, summed over the replicas (not per
            replica): ``num_iterations = episode_length * num_episodes // train_batch_size``.
        train_batch_size: Env steps per iteration summed over replicas (B * E).
        env_backend: ``"pycuda"`` or ``"cpu"``.
        seed: Base seed, or None to let the trainer pick one.
        bootstrap_at_time_limit: Treat an episode cut by ``episode_length`` as truncated and
            bootstrap from the value of its final observation (gymnasium semantics); False
            treats the time limit as a true end (fixed-horizon games such as Tag).
        use_cuda_graph: Capture the rollout, and each actor-critic policy's minibatch gradient
            step, in CUDA graphs and replay them (pycuda backend).
        tf32: Allow TF32 tensor-core math for float32 matrix products on the GPU.
        update_precision: ``"fp32"`` or ``"bf16"``: the update's forward and backward run under
            bfloat16 autocast (weights, optimizer state and losses stay float32).
        n_step: 2.7.1's n-step return horizon of DDPG; A2C/PPO accept only 1 (they use GAE over
            the whole rollout, see ``policy.<tag>.gae_lambda``).
        neg_pos_env_ratio: When > 0, each update trains on the envs whose rollout holds a
            successful episode end (``_done_ == 2``) plus at most this many times as many other
            envs, drawn at random (2.7.1's down-sampling of unsuccessful envs); <= 0 is off.
        evaluator: On every logging iteration also play one greedy episode per env and log its
            returns (``<tag>/test_episode_return_mean``, ``<tag>/test_episode_length_mean``).
        eval_every: When > 0, after the first iteration, every ``eval_every``-th and the last, play
            ``eval_episodes`` episodes per policy against uniform-random other policies and log the
            mean return as ``<tag>/eval_return`` (:mod:`warp_drive.training.periodic_eval`).
        eval_episodes: Episodes in total over the replicas, per policy, of each such evaluation.
        keep_best: End with each policy's best-evaluated weights where they beat the last
            evaluation (needs ``eval_every`` > 0).
    """

    num_gpus: int
    num_envs: int
    num_episodes: int
    train_batch_size: int
    env_backend: str
    seed: int | None
    bootstrap_at_time_limit: bool = True
    use_cuda_graph: bool = True
    tf32: bool = True
    update_precision: str = "fp32"
    n_step: int = 1
    neg_pos_env_ratio: float = -1.0
    evaluator: bool = False
    eval_every: int = 0
    eval_episodes: int = 16
    keep_best: bool = False

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "trainer") -> TrainerConfig:
        d = chk.merged_section(section, load_defaults()["trainer"], prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        num_envs = chk.as_int(d["num_envs"], key("num_envs"), minimum=1)
        batch = chk.as_int(d["train_batch_size"], key("train_batch_size"), minimum=1)
        if batch % num_envs != 0:
            raise ConfigError(
                f"`{key('train_batch_size')}`={batch} is not a multiple of "
                f"`{key('num_envs')}`={num_envs}; expected train_batch_size = B * num_envs. "
                f"Set `{key('train_batch_size')}` to e.g. {max(1, batch // num_envs) * num_envs}."
            )
        backend = chk.as_str(d["env_backend"], key("env_backend"))
        if is_numba(backend):
            logger.info("`%s`=%r: there is no Numba backend here; the envs run their CUDA kernels on pycuda.",
                        key("env_backend"), backend)
        try:
            backend = canonical_backend(backend, f"`{key('env_backend')}`")
        except ConfigError as err:
            raise ConfigError(f"{err} (the numba backend was dropped: 'numba' runs on pycuda).") from None
        return cls(
            num_gpus=chk.as_int(d["num_gpus"], key("num_gpus"), minimum=1),
            num_envs=num_envs,
            num_episodes=chk.as_int(d["num_episodes"], key("num_episodes"), minimum=1),
            train_batch_size=batch,
            env_backend=backend,
            seed=None if d["seed"] is None else chk.as_int(d["seed"], key("seed"), minimum=0),  # and < 2**31
            **{k: chk.as_bool(d[k], key(k))
               for k in ("bootstrap_at_time_limit", "use_cuda_graph", "tf32", "evaluator")},
            update_precision=_precision(d["update_precision"], key("update_precision")),
            n_step=chk.as_int(d["n_step"], key("n_step"), minimum=1),
            neg_pos_env_ratio=chk.as_float(d["neg_pos_env_ratio"], key("neg_pos_env_ratio")),
            **_periodic_eval(d, key),
        )

    @property
    def batch_size_per_env(self) -> int:
        """Rollout length B: env steps stored per replica per iteration."""
        return self.train_batch_size // self.num_envs

    def num_iterations(self, episode_length: int) -> int:
        """Training iterations: ``episode_length * num_episodes // train_batch_size``.

        Raises:
            ConfigError: If that is < 1.
        """
        total = int(episode_length) * self.num_episodes
        iters = total // self.train_batch_size
        if iters < 1:
            raise ConfigError(
                f"`trainer.num_episodes`={self.num_episodes} x episode_length={episode_length} = "
                f"{total} env steps is less than one iteration (`trainer.train_batch_size`="
                f"{self.train_batch_size}); raise `trainer.num_episodes` to at least "
                f"{-(-self.train_batch_size // max(1, int(episode_length)))}."
            )
        return iters


@dataclass(frozen=True)
class PolicyConfig(chk.PlainDict):
    """One ``policy.<tag>`` section. See ``defaults.yaml`` for the meaning of each key.

    ``lr``, ``vf_loss_coeff`` and ``entropy_coeff`` are a float or a schedule: a tuple of
    ``(timestep, value)`` pairs (see ``warp_drive.training.utils.param_scheduler``).
    """

    to_train: bool
    algorithm: str
    gamma: float
    gae_lambda: float
    lr: float | chk.Schedule
    vf_loss_coeff: float | chk.Schedule
    entropy_coeff: float | chk.Schedule
    clip_grad_norm: bool
    max_grad_norm: float
    normalize_advantage: bool
    normalize_return: bool
    normalize_reward: bool
    clip_param: float
    vf_clip_param: float | None
    num_epochs: int
    num_minibatches: int
    model: ModelConfig

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "policy") -> PolicyConfig:
        """Parses and validates a (partial) policy mapping; ``prefix`` is e.g. ``policy.runner``.

        A section of another algorithm (``algorithm: DDPG``, ``SAC``, ...) is parsed by that
        algorithm's section class (:func:`parse_policy_section`; its keys differ) and returns one.
        """
        raw_algorithm = section.get("algorithm") if isinstance(section, Mapping) else None
        if raw_algorithm is not None:
            entry = algorithm_entry(raw_algorithm, chk.join_key(prefix, "algorithm"))
            if entry.name not in ALGORITHMS:
                return entry.section_class().from_dict(section, prefix)
        d = chk.merged_section(section, load_defaults()["policy"], prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        algorithm = algorithm_entry(d["algorithm"], key("algorithm")).name
        gamma = chk.as_unit_interval(d["gamma"], key("gamma"), "(e.g. 0.99)")
        lam = chk.as_unit_interval(d["gae_lambda"], key("gae_lambda"), "(1.0 = plain discounted returns, 0.95 is "
                                   "usual for PPO)", include_zero=True)
        clip_param = chk.as_positive(d["clip_param"], key("clip_param"))
        vf_clip = None if d["vf_clip_param"] is None else chk.as_positive(d["vf_clip_param"], key("vf_clip_param"))
        epochs = chk.as_int(DEFAULT_NUM_EPOCHS[algorithm] if d["num_epochs"] is None else d["num_epochs"],
                            key("num_epochs"), minimum=1)
        minibatches = chk.as_int(d["num_minibatches"], key("num_minibatches"), minimum=1)
        if algorithm == "PPO" and epochs * minibatches == 1:
            logger.warning(
                "%s: PPO with num_epochs=1 and num_minibatches=1 makes one gradient step per "
                "batch; the probability ratio is then 1 and the clip never binds (A2C).",
                prefix,
            )
        return cls(
            **{k: chk.as_bool(d[k], key(k)) for k in ("to_train", "clip_grad_norm", "normalize_advantage",
                                                        "normalize_return", "normalize_reward")},
            algorithm=algorithm,
            gamma=gamma,
            gae_lambda=lam,
            lr=chk.as_schedule(d["lr"], key("lr"), positive_number=True),
            vf_loss_coeff=chk.as_schedule(d["vf_loss_coeff"], key("vf_loss_coeff"), positive_number=False),
            entropy_coeff=chk.as_schedule(d["entropy_coeff"], key("entropy_coeff"), positive_number=False),
            max_grad_norm=chk.as_positive(d["max_grad_norm"], key("max_grad_norm")),
            clip_param=clip_param,
            vf_clip_param=vf_clip,
            num_epochs=epochs,
            num_minibatches=minibatches,
            model=ModelConfig.from_dict(d["model"], key("model")),
        )


@dataclass(frozen=True)
class SavingConfig(chk.PlainDict):
    """The ``saving`` section: results go to ``basedir/name/tag/<run id>``.

    Attributes:
        metrics_log_freq: Log a metrics row every this many iterations (the trainer also logs
            after the first iteration and at least every tenth of the run).
        model_params_save_freq: Checkpoint every this many iterations (and at the end).
        checkpoint_every_seconds: Also checkpoint at the first iteration boundary after this
            many seconds of wall time since the last checkpoint; 0 turns it off.
        basedir, name, tag: The run folder is ``basedir/name/tag/<run id>``.
    """

    metrics_log_freq: int
    model_params_save_freq: int
    basedir: str
    name: str
    tag: str
    checkpoint_every_seconds: float = 300.0

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "saving") -> SavingConfig:
        d = chk.merged_section(section, load_defaults()["saving"], prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        return cls(
            **{k: chk.as_int(d[k], key(k), minimum=1) for k in ("metrics_log_freq", "model_params_save_freq")},
            **{k: chk.as_str(d[k], key(k)) for k in ("basedir", "name", "tag")},
            checkpoint_every_seconds=_non_negative(d["checkpoint_every_seconds"], key("checkpoint_every_seconds")),
        )


def _non_negative(value: Any, key: str) -> float:
    number = chk.as_float(value, key)
    if not number >= 0:
        raise ConfigError(f"`{key}`={chk.brief(value)} must be >= 0 (0 turns it off).")
    return number


@dataclass(frozen=True)
class SamplerConfig:
    """The ``sampler`` section: ``sampler.params.use_argmax``, and for DDPG policies the
    Ornstein-Uhlenbeck noise parameters ``damping``, ``stddev``, ``scale`` (numbers or schedules;
    ``ou_noise`` holds those the config sets)."""

    use_argmax: bool
    ou_noise: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "sampler") -> SamplerConfig:
        defaults = load_defaults()["sampler"]
        d = chk.merged_section(section, defaults, prefix)
        params_key = chk.join_key(prefix, "params")
        raw_params = chk.require_mapping(d["params"], params_key)
        ou_noise = parse_ou_params(raw_params, params_key)
        raw_params = {k: v for k, v in raw_params.items() if k not in OU_NOISE_PARAMS}
        params = chk.merged_section(raw_params, defaults["params"], params_key)
        return cls(use_argmax=chk.as_bool(params["use_argmax"], f"{prefix}.params.use_argmax"), ou_noise=ou_noise)

    def to_dict(self) -> dict[str, Any]:
        params: dict[str, Any] = {"use_argmax": self.use_argmax}
        params.update({k: chk.schedule_to_plain(v) for k, v in self.ou_noise.items()})
        return {"params": params}


def _check_run_settings(policy: Mapping[str, Any], trainer: TrainerConfig, sampler: Any) -> None:
    """``trainer.n_step`` and extra ``sampler.params`` only where a policy's algorithm reads them
    (:class:`~warp_drive.config.algorithms.AlgorithmEntry`)."""
    entries = [algorithm_entry(p.algorithm) for p in policy.values()]
    readers = [name for name in algorithm_names() if algorithm_entry(name).reads_n_step]
    if trainer.n_step != 1 and not any(e.reads_n_step for e in entries):
        raise ConfigError(
            f"`trainer.n_step`={trainer.n_step}: only {', '.join(readers) or 'no algorithm'} use n-step targets; "
            f"these policies are {', '.join(sorted({e.name for e in entries}))} (A2C and PPO bootstrap GAE over the "
            "whole rollout). Remove `trainer.n_step` (or set it to 1) and tune `policy.<tag>.gae_lambda` instead.")
    params = sampler.get("params") if isinstance(sampler, Mapping) else None
    read = {k for e in entries for k in e.sampler_params}
    extra = [n for n in OU_NOISE_PARAMS if isinstance(params, Mapping) and n in params and n not in read]
    if extra:
        raise ConfigError(
            f"`sampler.params.{extra[0]}` sets the Ornstein-Uhlenbeck exploration noise of DDPG policies; these "
            f"policies are {', '.join(sorted({e.name for e in entries}))} (they sample their own actions). Remove "
            f"`sampler.params.{', '.join(extra)}`.")


@dataclass(frozen=True)
class RunConfig:
    """A whole run config.

    Attributes:
        name: Run (env) name.
        env: Keyword arguments of the env class, unchecked here (see ``check_env_kwargs``).
        policy: Policy tag -> policy section (insertion order of the YAML).
    """

    name: str
    env: dict[str, Any]
    trainer: TrainerConfig
    policy: dict[str, PolicyConfig]
    saving: SavingConfig
    sampler: SamplerConfig

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunConfig:
        """Parses, fills defaults and validates a run-config mapping.

        Raises:
            ConfigError: On an unknown key, a wrong type or an impossible value; the message
                names the dotted key, the value and the fix.
        """
        raw = chk.require_mapping(raw, "<run config>")
        defaults = load_defaults()
        chk.reject_null_sections(raw, defaults)  # and unknown top-level keys
        trainer = TrainerConfig.from_dict(raw.get("trainer"))
        policies_raw = chk.require_mapping(raw.get("policy"), "policy")
        if not policies_raw:
            raise ConfigError(
                "`policy` has no policy tags; add at least one, e.g. "
                "`policy: {shared: {to_train: true}}`."
            )
        policy: dict[str, PolicyConfig] = {}
        for tag, section in policies_raw.items():
            prefix = f"policy.{tag}"
            if not isinstance(tag, str) or not tag:
                raise ConfigError(f"`policy` tag {chk.brief(tag)} must be a non-empty string.")
            cfg = PolicyConfig.from_dict(section, prefix)
            if trainer.train_batch_size % cfg.num_minibatches != 0:
                raise ConfigError(
                    f"`{prefix}.num_minibatches`={cfg.num_minibatches} does not divide the "
                    f"{trainer.train_batch_size} samples per iteration (`trainer.train_batch_size` "
                    f"= B * num_envs = {trainer.batch_size_per_env} * {trainer.num_envs}); pick a "
                    "divisor of train_batch_size."
                )
            policy[tag] = cfg
        _check_run_settings(policy, trainer, raw.get("sampler"))
        if not any(p.to_train for p in policy.values()):
            logger.warning("no policy has `to_train: true`; training will not update any model.")
        env = dict(chk.require_mapping(raw.get("env"), "env"))
        if env.get("seed") is not None:  # None or an integer in [0, 2**31)
            chk.as_int(env["seed"], "env.seed", minimum=0)
        if "episode_length" in env:
            trainer.num_iterations(
                chk.as_int(env["episode_length"], "env.episode_length", minimum=1)
            )
        return cls(
            name=chk.as_str(raw.get("name", defaults["name"]), "name"),
            env=copy.deepcopy(env),
            trainer=trainer,
            policy=policy,
            saving=SavingConfig.from_dict(raw.get("saving")),
            sampler=SamplerConfig.from_dict(raw.get("sampler")),
        )

    @property
    def policy_tags(self) -> tuple[str, ...]:
        """Policy tags in config order."""
        return tuple(self.policy)

    @property
    def policies_to_train(self) -> tuple[str, ...]:
        """Tags of the policies with ``to_train: true``."""
        return tuple(tag for tag, p in self.policy.items() if p.to_train)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form: ``RunConfig.from_dict(cfg.to_dict()) == cfg``."""
        return {
            "name": self.name,
            "env": copy.deepcopy(self.env),
            "trainer": self.trainer.to_dict(),
            "policy": {tag: p.to_dict() for tag, p in self.policy.items()},
            "saving": self.saving.to_dict(),
            "sampler": self.sampler.to_dict(),
        }
