"""The ``policy.<tag>`` section of an A2C or PPO policy (:class:`ActorCriticConfig`).

Its keys and defaults are the ``policy`` section of ``warp_drive/config/defaults.yaml`` (2.7.1's
shape). The registry entries ``A2C`` and ``PPO`` (:mod:`warp_drive.config.algorithms`) name this
class as their section parser; so may a new algorithm that reuses the section (its name is then the
``algorithm`` value, and ``num_epochs`` defaults to 1).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from warp_drive.utils import checks as chk
from warp_drive.config._yaml import load_defaults
from warp_drive.config.algorithms import algorithm_entry
from warp_drive.config.model import ModelConfig
from warp_drive.training.agent_masks import parse_setting
from warp_drive.training.network_inputs import ACTOR_INPUTS, CRITIC_INPUTS, parse_input

logger = logging.getLogger(__name__)

#: the built-in algorithms of this section class
ALGORITHMS = ("A2C", "PPO")
#: num_epochs used when the config leaves it null (1 for any other algorithm that reuses the section).
DEFAULT_NUM_EPOCHS = {"A2C": 1, "PPO": 4}


@dataclass(frozen=True)
class ActorCriticConfig(chk.PlainDict):
    """One A2C/PPO ``policy.<tag>`` section. See ``defaults.yaml`` for the meaning of each key.

    ``lr``, ``vf_loss_coeff`` and ``entropy_coeff`` are a float or a schedule: a tuple of
    ``(timestep, value)`` pairs (see ``warp_drive.training.utils.param_scheduler``). ``actor_input`` and
    ``critic_input``: what each network sees (:mod:`warp_drive.training.network_inputs`). ``action_mask`` and
    ``mask_inactive``: ``auto`` / ``on`` / ``off``, whether the policy reads the env's ``action_mask`` and
    ``active`` arrays (:mod:`warp_drive.training.agent_masks`).
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
    actor_input: str = "local"
    critic_input: str = "local"
    action_mask: str = "auto"
    mask_inactive: str = "auto"

    #: advice when the run config sets a ``trainer`` key that other algorithms read (``_check_run_settings``)
    INSTEAD_OF: ClassVar[dict[str, str]] = {
        "n_step": "A2C and PPO bootstrap GAE over the whole rollout: tune `policy.<tag>.gae_lambda` instead"}

    @classmethod
    def default_num_epochs(cls, algorithm: str) -> int:
        """``num_epochs`` when the section leaves it null (:data:`DEFAULT_NUM_EPOCHS`, else 1)."""
        return DEFAULT_NUM_EPOCHS.get(algorithm, 1)

    @classmethod
    def clips_ratio(cls, algorithm: str) -> bool:
        """The algorithm's loss clips the probability ratio (PPO's): one gradient step per batch is then A2C."""
        return algorithm == "PPO"

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "policy") -> Any:
        """Parses and validates a (partial) policy mapping; ``prefix`` is e.g. ``policy.runner``.

        A section whose registry entry names another section class (``algorithm: DDPG``, ``SAC``,
        ...) is parsed by that class (its keys differ) and returns one (2.7.1 code calls this
        class for every section).
        """
        raw_algorithm = section.get("algorithm") if isinstance(section, Mapping) else None
        if raw_algorithm is not None:
            section_class = algorithm_entry(raw_algorithm, chk.join_key(prefix, "algorithm")).section_class()
            if not (isinstance(section_class, type) and issubclass(cls, section_class)):
                return section_class.from_dict(section, prefix)
        d = chk.merged_section(section, load_defaults()["policy"], prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        algorithm = algorithm_entry(d["algorithm"], key("algorithm")).name
        gamma = chk.as_unit_interval(d["gamma"], key("gamma"), "(e.g. 0.99)")
        lam = chk.as_unit_interval(d["gae_lambda"], key("gae_lambda"), "(1.0 = plain discounted returns, 0.95 is "
                                   "usual for PPO)", include_zero=True)
        clip_param = chk.as_positive(d["clip_param"], key("clip_param"))
        vf_clip = None if d["vf_clip_param"] is None else chk.as_positive(d["vf_clip_param"], key("vf_clip_param"))
        epochs, minibatches = chk.as_update_steps(cls.default_num_epochs(algorithm) if d["num_epochs"] is None
                                                  else d["num_epochs"], d["num_minibatches"], prefix)
        if cls.clips_ratio(algorithm) and epochs * minibatches == 1:
            logger.warning(
                "%s: %s with num_epochs=1 and num_minibatches=1 makes one gradient step per "
                "batch; the probability ratio is then 1 and the clip never binds (A2C).",
                prefix, algorithm,
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
            actor_input=parse_input(d["actor_input"], key("actor_input"), ACTOR_INPUTS),
            critic_input=parse_input(d["critic_input"], key("critic_input"), tuple(CRITIC_INPUTS)),
            action_mask=parse_setting(d["action_mask"], key("action_mask")),
            mask_inactive=parse_setting(d["mask_inactive"], key("mask_inactive")),
        )

