"""Run configuration: frozen dataclasses parsed and validated by hand-written ``from_dict``.

The YAML shape is WarpDrive 2.x's (``name``, ``env``, ``trainer``, ``policy.<tag>``, ``saving``,
optional ``sampler``), so the reference run configs load unchanged. ``from_dict``

1. rejects unknown keys with a "did you mean" hint naming the dotted key,
2. fills missing keys from ``defaults.yaml``,
3. validates types, ranges and divisibility once, raising :class:`ConfigError`,
4. exposes derived values as read-only properties (the config is never mutated).

``to_dict`` returns plain Python data that ``from_dict`` accepts again (round trip).

This module holds the sections every run has (``trainer``, ``saving``, ``sampler``) and
:class:`RunConfig`; each ``policy.<tag>`` section is parsed by its algorithm's section class, found in
the registry (:mod:`warp_drive.config.algorithms`; the classes live in the algorithms' folders,
e.g. A2C/PPO's ``ActorCriticConfig``). ``PolicyConfig`` (that class), ``ALGORITHMS``,
``DEFAULT_NUM_EPOCHS`` and ``OU_NOISE_PARAMS`` are still importable from here (resolved on first use).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from warp_drive.utils import checks as chk
from warp_drive.config._yaml import load_defaults
from warp_drive.config.algorithms import (
    algorithm_entry,
    resolve,
    sampler_param_entries,
    trainer_param_entries,
)
from warp_drive.vocab.backends import BACKENDS, canonical_backend
from warp_drive.errors import ConfigError

logger = logging.getLogger(__name__)

ENV_BACKENDS = BACKENDS
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
        env_backend: ``"pycuda"`` (the envs' CUDA C steps), ``"numba"`` (their Numba steps) or ``"cpu"``.
        seed: Base seed, or None to let the trainer pick one.
        bootstrap_at_time_limit: Treat an episode cut by ``episode_length`` as truncated and
            bootstrap from the value of its final observation (gymnasium semantics); False
            treats the time limit as a true end (fixed-horizon games such as Tag).
        use_cuda_graph: Capture the rollout, and each actor-critic policy's minibatch gradient
            step, in CUDA graphs and replay them (a GPU backend).
        tf32: Allow TF32 tensor-core math for float32 matrix products on the GPU.
        update_precision: ``"fp32"`` or ``"bf16"``: the update's forward and backward run under
            bfloat16 autocast (weights, optimizer state and losses stay float32).
        rollout_precision: ``"fp32"`` or ``"bf16"``: the rollout's policy forward runs under bfloat16
            autocast (the sampled probabilities and values are float32).
        compile: ``torch.compile`` (Inductor) the policy forward of the rollout and the forward + loss
            of the update on a GPU (:mod:`~warp_drive.training.algorithms.compiled`); ignored on the CPU.
        algorithm_params: The ``trainer`` keys that algorithms read (their registry entries'
            ``trainer_params``, parsed by their ``trainer_parser``: DDPG's ``n_step``), those the config
            sets to other than their default; :attr:`n_step` reads 2.7.1's.
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
    rollout_precision: str = "fp32"
    compile: bool = False
    neg_pos_env_ratio: float = -1.0
    evaluator: bool = False
    eval_every: int = 0
    eval_episodes: int = 16
    keep_best: bool = False
    algorithm_params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "trainer") -> TrainerConfig:
        section = chk.require_mapping(section, prefix)
        readers = trainer_param_entries()
        algorithm_params: dict[str, Any] = {}
        for entry in {id(e): e for es in readers.values() for e in es}.values():
            algorithm_params.update(entry.parse_trainer_params(section, prefix))
        d = chk.merged_section({k: v for k, v in section.items() if k not in readers}, load_defaults()["trainer"], prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        num_envs = chk.as_int(d["num_envs"], key("num_envs"), minimum=1)
        batch = chk.as_int(d["train_batch_size"], key("train_batch_size"), minimum=1)
        if batch % num_envs != 0:
            raise ConfigError(
                f"`{key('train_batch_size')}`={batch} is not a multiple of "
                f"`{key('num_envs')}`={num_envs}; expected train_batch_size = B * num_envs. "
                f"Set `{key('train_batch_size')}` to e.g. {max(1, batch // num_envs) * num_envs}."
            )
        backend = canonical_backend(chk.as_str(d["env_backend"], key("env_backend")), f"`{key('env_backend')}`")
        return cls(
            num_gpus=chk.as_int(d["num_gpus"], key("num_gpus"), minimum=1),
            num_envs=num_envs,
            num_episodes=chk.as_int(d["num_episodes"], key("num_episodes"), minimum=1),
            train_batch_size=batch,
            env_backend=backend,
            seed=None if d["seed"] is None else chk.as_int(d["seed"], key("seed"), minimum=0),  # and < 2**31
            **{k: chk.as_bool(d[k], key(k))
               for k in ("bootstrap_at_time_limit", "use_cuda_graph", "tf32", "evaluator", "compile")},
            update_precision=_precision(d["update_precision"], key("update_precision")),
            rollout_precision=_precision(d["rollout_precision"], key("rollout_precision")),
            neg_pos_env_ratio=chk.as_float(d["neg_pos_env_ratio"], key("neg_pos_env_ratio")),
            **_periodic_eval(d, key),
            algorithm_params=algorithm_params,
        )

    @property
    def n_step(self) -> int:
        """2.7.1's ``trainer.n_step``: DDPG's n-step horizon (1 unless the config sets it)."""
        return int(self.algorithm_params.get("n_step", 1))

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form; the algorithms' keys at the top of the section, as the config gives them."""
        out = chk.to_plain(self)
        out.update(out.pop("algorithm_params"))
        return out

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
            basedir=chk.as_path(d["basedir"], key("basedir")),
            **{k: chk.as_relative_path(d[k], key(k)) for k in ("name", "tag")},
            checkpoint_every_seconds=_non_negative(d["checkpoint_every_seconds"], key("checkpoint_every_seconds")),
        )


def _non_negative(value: Any, key: str) -> float:
    number = chk.as_float(value, key)
    if not number >= 0:
        raise ConfigError(f"`{key}`={chk.brief(value)} must be >= 0 (0 turns it off).")
    return number


@dataclass(frozen=True)
class SamplerConfig:
    """The ``sampler`` section: ``sampler.params.use_argmax``, and the params that algorithms read
    (their entries' ``sampler_params``, parsed by their ``sampler_parser``: DDPG's Ornstein-Uhlenbeck
    noise ``damping``, ``stddev``, ``scale``, numbers or schedules). ``ou_noise`` (2.7.1's name)
    holds those the config sets."""

    use_argmax: bool
    ou_noise: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "sampler") -> SamplerConfig:
        defaults = load_defaults()["sampler"]
        d = chk.merged_section(section, defaults, prefix)
        params_key = chk.join_key(prefix, "params")
        raw_params = chk.require_mapping(d["params"], params_key)
        readers = sampler_param_entries()
        ou_noise: dict[str, Any] = {}
        for entry in {id(e): e for e in readers.values()}.values():
            ou_noise.update(entry.parse_sampler_params(raw_params, params_key))
        raw_params = {k: v for k, v in raw_params.items() if k not in readers}
        params = chk.merged_section(raw_params, defaults["params"], params_key)
        return cls(use_argmax=chk.as_bool(params["use_argmax"], f"{prefix}.params.use_argmax"), ou_noise=ou_noise)

    def to_dict(self) -> dict[str, Any]:
        params: dict[str, Any] = {"use_argmax": self.use_argmax}
        params.update({k: chk.schedule_to_plain(v) for k, v in self.ou_noise.items()})
        return {"params": params}


def parse_policy_section(section: Any, prefix: str) -> Any:
    """One ``policy.<tag>`` section, parsed by the section class of its ``algorithm``'s registry entry
    (``algorithm`` defaults to ``defaults.yaml``'s)."""
    raw = section.get("algorithm") if isinstance(section, Mapping) else None
    name = load_defaults()["policy"]["algorithm"] if raw is None else raw
    return algorithm_entry(name, chk.join_key(prefix, "algorithm")).section_class().from_dict(section, prefix)


def _check_run_settings(policy: Mapping[str, Any], trainer: TrainerConfig, sampler: Any) -> None:
    """The algorithms' ``trainer`` keys (``n_step``) and ``sampler.params`` only where a policy's algorithm reads them
    (:class:`~warp_drive.config.algorithms.AlgorithmEntry`)."""
    entries = [algorithm_entry(p.algorithm) for p in policy.values()]
    read = {k for e in entries for k in e.trainer_params}
    for key, value in trainer.algorithm_params.items():
        if key not in read:
            readers = trainer_param_entries().get(key, [])
            advice = sorted({a for p in policy.values() if (a := getattr(type(p), "INSTEAD_OF", {}).get(key))})
            raise ConfigError(
                f"`trainer.{key}`={chk.brief(value)}: only {', '.join(e.name for e in readers) or 'no algorithm'} "
                f"policies read it ({'; '.join(e.summary for e in readers)}); these policies are "
                f"{', '.join(sorted({e.name for e in entries}))}, which do not"
                + (f" ({'; '.join(advice)})" if advice else "") + f". Remove `trainer.{key}`.")
    params = sampler.get("params") if isinstance(sampler, Mapping) else None
    read = {k for e in entries for k in e.sampler_params}
    readers = sampler_param_entries()
    extra = [n for n in readers if isinstance(params, Mapping) and n in params and n not in read]
    if extra:
        owner = readers[extra[0]]
        raise ConfigError(
            f"`sampler.params.{extra[0]}` sets the exploration noise of {owner.name} policies ({owner.summary}); these "
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
    policy: dict[str, Any]
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
        if "trainer" not in raw:
            t = defaults["trainer"]
            logger.info("the run config has no `trainer` section: defaults.yaml's are used (num_envs=%s, "
                        "train_batch_size=%s, num_episodes=%s)", t["num_envs"], t["train_batch_size"], t["num_episodes"])
        trainer = TrainerConfig.from_dict(raw.get("trainer"))
        policies_raw = chk.require_mapping(raw.get("policy"), "policy")
        if not policies_raw:
            raise ConfigError(
                "`policy` has no policy tags; add at least one, e.g. "
                "`policy: {shared: {to_train: true}}`."
            )
        policy: dict[str, Any] = {}
        for tag, section in policies_raw.items():
            prefix = f"policy.{tag}"
            if not isinstance(tag, str) or not tag:
                raise ConfigError(f"`policy` tag {chk.brief(tag)} must be a non-empty string.")
            cfg = parse_policy_section(section, prefix)
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
        chk.check_free_section(env, "env")
        if env.get("seed") is not None:  # None or an integer in [0, 2**31); 1e3 or 1000.0: 1000, for any env class
            env["seed"] = chk.as_int(env["seed"], "env.seed", minimum=0)
        if "episode_length" in env:
            env["episode_length"] = chk.as_int(env["episode_length"], "env.episode_length", minimum=1)
            trainer.num_iterations(env["episode_length"])
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


#: names that moved to the algorithms' folders -> ``"module:attribute"`` (resolved on first use)
MOVED_NAMES = {
    "PolicyConfig": "warp_drive.training.algorithms.actor_critic.config:ActorCriticConfig",
    "ALGORITHMS": "warp_drive.training.algorithms.actor_critic.config:ALGORITHMS",
    "DEFAULT_NUM_EPOCHS": "warp_drive.training.algorithms.actor_critic.config:DEFAULT_NUM_EPOCHS",
    "OU_NOISE_PARAMS": "warp_drive.training.algorithms.ddpg.config:OU_NOISE_PARAMS",
}


def __getattr__(name: str) -> Any:
    if name in MOVED_NAMES:
        return resolve(MOVED_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
