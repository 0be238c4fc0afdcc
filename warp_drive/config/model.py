"""The ``policy.<tag>.model`` section: one network's type, widths, init and checkpoint file.

Shared by the A2C/PPO policy section (:class:`~warp_drive.config.PolicyConfig`) and the two
networks of a DDPG section (:class:`~warp_drive.config.ddpg.DDPGModelConfig`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from warp_drive.config import _checks as chk
from warp_drive.config._yaml import load_defaults
from warp_drive.errors import ConfigError

INIT_METHODS = ("default", "xavier", "orthogonal")


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
            kwargs=dict(chk.require_mapping(d["kwargs"], key("kwargs"))),
            output_w=None if d["output_w"] is None else chk.as_float(d["output_w"], key("output_w")),
            output_b=None if d["output_b"] is None else chk.as_float(d["output_b"], key("output_b")),
        )
