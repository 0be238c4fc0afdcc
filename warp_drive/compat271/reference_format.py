"""WarpDrive 2.7.1's parameter names for the fully connected policy, both ways.

2.7.1 saved its ``FullyConnected`` model with ``torch.save(model.state_dict())`` under these names
(hidden layer ``i`` wrapped in a ``Sequential(Linear, ReLU)`` of a ``ModuleDict``)::

    fc.<i>.0.weight / fc.<i>.0.bias        hidden layer i (i = 0 .. len(fc_dims) - 1)
    policy_head.<h>.weight / .bias         categorical head h
    vf_head.weight / vf_head.bias          value head

Our :class:`~warp_drive.training.models.fully_connected.FullyConnected` holds the same tensors as
``trunk.<2i>.*`` (``Linear`` and ``ReLU`` alternate in one ``Sequential``), ``policy_heads.<h>.*``
and ``value_head.*``; the computation is identical (ReLU after every hidden layer, softmax per
head). The mapping is a pure renaming: no tensor changes shape or value.

``FullyConnected.load_state_dict`` recognises 2.7.1's names by themselves, so a 2.7.1 file loads
through ``model_ckpt_filepath`` and ``Trainer.load_model_checkpoint`` unchanged;
:func:`to_reference_state_dict` writes ours in 2.7.1's names (what ``save_model_checkpoint`` saves,
and what 2.7.1 itself can load: :mod:`warp_drive.training.checkpoint_files` writes and reads the
files). 2.7.1 saved a model wrapped in DistributedDataParallel with a ``module.`` prefix on every
name, which :func:`strip_ddp_prefix` removes.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from warp_drive.errors import ConfigError

_DDP_PREFIX = "module."
_REFERENCE_KEY = re.compile(r"^(fc\.(\d+)\.0|policy_head(\.(\d+))?|vf_head)\.(weight|bias)$")
_OUR_KEY = re.compile(r"^(trunk\.(\d+)|policy_heads\.(\d+)|value_head)\.(weight|bias)$")


def strip_ddp_prefix(state_dict: Mapping[str, Any]) -> "OrderedDict[str, Any]":
    """The same entries without the ``module.`` prefix a DistributedDataParallel wrapper adds."""
    return OrderedDict((k[len(_DDP_PREFIX):] if k.startswith(_DDP_PREFIX) else k, v) for k, v in state_dict.items())


def is_reference_state_dict(state_dict: Mapping[str, Any]) -> bool:
    """True when the keys are 2.7.1's fully connected names (``fc.0.0.weight``, ``vf_head.bias``, ...)."""
    keys = list(strip_ddp_prefix(state_dict))
    return bool(keys) and any(k.startswith("vf_head.") for k in keys) and all(_REFERENCE_KEY.match(k) for k in keys)


def from_reference_state_dict(state_dict: Mapping[str, Any]) -> "OrderedDict[str, Any]":
    """2.7.1's names -> ours (``fc.<i>.0`` -> ``trunk.<2i>``, ``policy_head.<h>`` -> ``policy_heads.<h>``,
    ``vf_head`` -> ``value_head``).

    Raises:
        ConfigError: A key is not one of 2.7.1's fully connected names, or the file holds a
            single un-indexed ``policy_head`` (2.7.1's deterministic tanh head for Box actions,
            which has no counterpart in our Gaussian head).
    """
    out: OrderedDict[str, Any] = OrderedDict()
    for key, value in strip_ddp_prefix(state_dict).items():
        m = _REFERENCE_KEY.match(key)
        if m is None:
            raise ConfigError(f"parameter {key!r} is not a name of 2.7.1's fully connected model "
                              "(fc.<i>.0.*, policy_head.<h>.*, vf_head.*); this file cannot be mapped")
        block, layer, _, head, kind = m.groups()
        if layer is not None:
            out[f"trunk.{2 * int(layer)}.{kind}"] = value
        elif block.startswith("policy_head"):
            if head is None:
                raise ConfigError(
                    f"parameter {key!r} is 2.7.1's deterministic head for Box actions "
                    "(tanh(policy_head(h)) * output_w + output_b); our continuous policies are Gaussian "
                    "with a learned std, so these weights have no exact counterpart. Retrain the policy "
                    "here, or load the weights into your own model class.")
            out[f"policy_heads.{int(head)}.{kind}"] = value
        else:
            out[f"value_head.{kind}"] = value
    return out


def to_reference_state_dict(model_or_state: nn.Module | Mapping[str, Any]) -> "OrderedDict[str, torch.Tensor]":
    """Our fully connected model (or its state_dict) in 2.7.1's names, in 2.7.1's key order.

    Raises:
        ConfigError: The model has a Gaussian head (``log_std``), which 2.7.1's format cannot hold,
            or parameters that are not our fully connected model's.
    """
    state = model_or_state.state_dict() if isinstance(model_or_state, nn.Module) else model_or_state
    trunk: dict[int, dict[str, Any]] = {}
    heads: dict[int, dict[str, Any]] = {}
    value: dict[str, Any] = {}
    for key, tensor in strip_ddp_prefix(state).items():
        if key == "log_std":
            raise ConfigError("this policy has a Gaussian head (log_std) for Box actions; 2.7.1's file "
                              "format has no such head. Save it with Trainer.save_checkpoint() or "
                              "torch.save(model.state_dict()) instead.")
        if key.startswith("obs_normalizer."):
            raise ConfigError("this policy normalizes its observations (model.kwargs.normalize_obs); 2.7.1's file "
                              "format has no such statistics. Save it with Trainer.save_checkpoint() or "
                              "torch.save(model.state_dict()) instead.")
        m = _OUR_KEY.match(key)
        if m is None:
            raise ConfigError(f"parameter {key!r} is not one of our FullyConnected model's; only that "
                              "model can be written in 2.7.1's format")
        _, layer, head, kind = m.groups()
        if layer is not None:
            trunk.setdefault(int(layer), {})[kind] = tensor
        elif head is not None:
            heads.setdefault(int(head), {})[kind] = tensor
        else:
            value[kind] = tensor
    out: OrderedDict[str, torch.Tensor] = OrderedDict()
    for i, layer in enumerate(sorted(trunk)):
        if layer != 2 * i:
            raise ConfigError(f"trunk layer index {layer} breaks the Linear/ReLU alternation 2.7.1's format needs")
        for kind in ("weight", "bias"):
            out[f"fc.{i}.0.{kind}"] = trunk[layer][kind]
    for h in sorted(heads):
        for kind in ("weight", "bias"):
            out[f"policy_head.{h}.{kind}"] = heads[h][kind]
    for kind in ("weight", "bias"):
        out[f"vf_head.{kind}"] = value[kind]
    return out
