"""The ``policy.<tag>.model`` section: one network's type, widths, init and checkpoint file.

Shared by the A2C/PPO policy section (:class:`~warp_drive.config.PolicyConfig`) and, through
:class:`ActorCriticModelConfig`, by the two networks of a DDPG or SAC section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from warp_drive.utils import checks as chk
from warp_drive.config._yaml import load_defaults
from warp_drive.errors import ConfigError

INIT_METHODS = ("default", "xavier", "orthogonal")
#: Most weights between the hidden layers of one network (``sum(fc_dims[i] * fc_dims[i + 1])``): 256 MB of float32.
MAX_HIDDEN_WEIGHTS = 1 << 26


@dataclass(frozen=True)
class ModelConfig(chk.PlainDict):
    """The ``policy.<tag>.model`` section.

    Attributes:
        type: Name registered in ``warp_drive.training.models.ModelFactory``.
        fc_dims: Hidden layer widths.
        model_ckpt_filepath: Checkpoint to load at start, or ``""``.
        init_method: ``"default"``, ``"xavier"`` or ``"orthogonal"``.
        output_w, output_b: 2.7.1's action scale and offset for continuous (Box) actions: the
            Gaussian mean becomes ``output_b + output_w * tanh(linear output)``, bounded like
            2.7.1's deterministic heads. None (default) keeps an unbounded linear mean.
        kwargs: Extra keyword arguments for a custom model class.
    """

    type: str
    fc_dims: tuple[int, ...]
    model_ckpt_filepath: str
    init_method: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    output_w: float | None = None
    output_b: float | None = None

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str = "model") -> ModelConfig:
        d = chk.merged_section(section, load_defaults()["policy"]["model"], prefix)
        key = lambda name: chk.join_key(prefix, name)  # noqa: E731
        dims = d["fc_dims"]
        if not isinstance(dims, (list, tuple)):
            raise ConfigError(
                f"`{key('fc_dims')}`={chk.brief(dims)} must be a list of layer widths, e.g. [64, 64]."
            )
        fc_dims = tuple(
            chk.as_int(v, f"{key('fc_dims')}[{i}]", minimum=1, maximum=2**16) for i, v in enumerate(dims)
        )
        _check_hidden_weights(fc_dims, key("fc_dims"))
        init = chk.as_str(d["init_method"], key("init_method")).lower()
        if init not in INIT_METHODS:
            match = chk.closest_match(init, INIT_METHODS)
            raise ConfigError(
                f"`{key('init_method')}`={chk.brief(d['init_method'])} is unknown; expected one of "
                f"{', '.join(INIT_METHODS)}" + (f"; did you mean `{match}`?" if match else ".")
            )
        ckpt = d["model_ckpt_filepath"]
        return cls(
            type=chk.as_str(d["type"], key("type")),
            fc_dims=fc_dims,
            model_ckpt_filepath="" if ckpt is None else chk.as_str(ckpt, key("model_ckpt_filepath")),
            init_method=init,
            kwargs=_kwargs(d["kwargs"], key("kwargs")),
            output_w=None if d["output_w"] is None else chk.as_float(d["output_w"], key("output_w")),
            output_b=None if d["output_b"] is None else chk.as_float(d["output_b"], key("output_b")),
        )


def _check_hidden_weights(fc_dims: tuple[int, ...], key: str) -> None:
    """The weights between hidden layers, checked before anything is allocated."""
    weights = sum(a * b for a, b in zip(fc_dims, fc_dims[1:]))
    if weights > MAX_HIDDEN_WEIGHTS:
        raise ConfigError(f"`{key}`={list(fc_dims)} has {weights:,} weights between its hidden layers "
                          f"({weights * 4 / 1e9:,.1f} GB of float32, before gradients and optimizer state); the most "
                          f"is {MAX_HIDDEN_WEIGHTS:,}: use narrower layers, e.g. [256, 256].")


def _kwargs(value: Any, key: str) -> dict[str, Any]:
    kwargs = dict(chk.require_mapping(value, key))
    chk.check_free_section(kwargs, key)
    return kwargs


@dataclass(frozen=True)
class ActorCriticModelConfig:
    """``policy.<tag>.model`` of an algorithm with an actor and a critic network (subclassed per algorithm).

    Attributes:
        actor, critic: one :class:`ModelConfig` per network.
        model_ckpt_filepath: ``{"actor": path, "critic": path}`` ("" = fresh weights).
    """

    #: the algorithm's name (for messages) and each network's defaults (the keys it may set)
    ALGORITHM: ClassVar[str]
    DEFAULTS: ClassVar[Mapping[str, Mapping[str, Any]]]
    ROLES: ClassVar[tuple[str, str]] = ("actor", "critic")

    actor: ModelConfig
    critic: ModelConfig
    model_ckpt_filepath: dict[str, str]

    @classmethod
    def from_dict(cls, section: Mapping[str, Any] | None, prefix: str) -> ActorCriticModelConfig:
        section = chk.require_mapping(section, prefix)
        chk.reject_unknown_keys(section, (*cls.ROLES, "model_ckpt_filepath"), prefix)
        return cls.from_networks(section, section.get("model_ckpt_filepath"), prefix)

    @classmethod
    def from_networks(cls, nets: Mapping[str, Any], files: Any, prefix: str) -> ActorCriticModelConfig:
        """Builds from ``{role: section}`` (each merged over its defaults) and the weight files."""
        models = {}
        for role in cls.ROLES:
            key = chk.join_key(prefix, role)
            models[role] = ModelConfig.from_dict(chk.merged_section(nets.get(role), cls.DEFAULTS[role], key), key)
        files_key = chk.join_key(prefix, "model_ckpt_filepath")
        files = files or {}
        if not isinstance(files, Mapping):
            raise ConfigError(f"`{files_key}`={chk.brief(files)}: a {cls.ALGORITHM} policy loads two weight files; "
                              f"write `{files_key}: {{actor: <path>, critic: <path>}}` (\"\" = fresh weights).")
        chk.reject_unknown_keys(files, cls.ROLES, files_key)
        paths = {role: files.get(role) or models[role].model_ckpt_filepath or "" for role in cls.ROLES}
        paths = {role: chk.as_str(p, chk.join_key(files_key, role)) if p else "" for role, p in paths.items()}
        return cls(actor=models["actor"], critic=models["critic"], model_ckpt_filepath=paths)

    def to_dict(self) -> dict[str, Any]:
        nets = {role: {k: v for k, v in getattr(self, role).to_dict().items() if k in self.DEFAULTS[role]}
                for role in self.ROLES}
        return {**nets, "model_ckpt_filepath": dict(self.model_ckpt_filepath)}
