"""Model registry: config ``model.type`` name -> model class."""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import Any

from torch import nn

from warp_drive.utils.checks import closest_match
from warp_drive.errors import ConfigError
from warp_drive.utils.excerpt import excerpt
from warp_drive.training.models.action_spec import ActionSpec, ObsDims

logger = logging.getLogger(__name__)

#: A class, or a lazy import path ``"package.module:ClassName"``.
ModelRef = type | str

_BUILTINS: dict[str, ModelRef] = {
    "fully_connected": "warp_drive.training.models.fully_connected:FullyConnected",
    "fully_connected_actor": "warp_drive.training.models.actor_critic:FullyConnectedActor",
    "fully_connected_action_value_critic": "warp_drive.training.models.actor_critic:FullyConnectedActionValueCritic",
    "squashed_gaussian_actor": "warp_drive.training.models.squashed_gaussian:SquashedGaussianActor",
    "gru": "warp_drive.training.models.gru:GRUActorCritic",
}

#: model type -> the class it builds when the critic sees another input than the actor (``critic_dims`` given)
_SEPARATE_CRITIC: dict[str, ModelRef] = {
    "fully_connected": "warp_drive.training.models.separate_critic:FullyConnectedSeparateCritic",
}


class ModelFactory:
    """Registry of model classes by name (instance state; each factory is independent).

    Built-in: ``fully_connected`` -> :class:`FullyConnected` (with a separate critic input:
    :class:`~warp_drive.training.models.separate_critic.FullyConnectedSeparateCritic`); DDPG's ``fully_connected_actor`` and
    ``fully_connected_action_value_critic`` (:mod:`~warp_drive.training.models.actor_critic`); SAC's
    ``squashed_gaussian_actor`` (:mod:`~warp_drive.training.models.squashed_gaussian`); the recurrent A2C/PPO model
    ``gru`` (:class:`~warp_drive.training.models.gru.GRUActorCritic`, its critic network of its own when given
    ``critic_dims``). See ``warp_drive.training.models``
    for the contract a custom model follows.
    """

    def __init__(self) -> None:
        self._registry: dict[str, ModelRef] = dict(_BUILTINS)

    def add(self, name: str, cls: ModelRef) -> None:
        """Registers ``cls`` (a class or ``"module:Class"`` path) under ``name``.

        Raises:
            ConfigError: If ``name`` is already registered or ``cls`` is malformed.
        """
        if name in self._registry:
            raise ConfigError(
                f"model type {name!r} is already registered ({self._describe(name)}); "
                "choose another name."
            )
        if isinstance(cls, str):
            if ":" not in cls:
                raise ConfigError(f"model path {cls!r} must look like 'package.module:ClassName'.")
        elif not isinstance(cls, type):
            raise ConfigError(f"model {cls!r} must be a class or a 'module:Class' path.")
        self._registry[name] = cls

    def names(self) -> tuple[str, ...]:
        return tuple(self._registry)

    def create(self, name: str) -> type:
        """Returns the class registered under ``name`` (importing it if given as a path).

        Raises:
            ConfigError: Unknown name (with a did-you-mean hint) or failed import.
        """
        if name not in self._registry:
            match = closest_match(name, self._registry)
            hint = f"did you mean {match!r}?" if match else "register it with ModelFactory.add()."
            raise ConfigError(
                f"model type {name!r} (`policy.<tag>.model.type`) is not registered; {hint} "
                f"Registered: {', '.join(self._registry)}."
            )
        cls = _import(name, self._registry[name])
        self._registry[name] = cls
        return cls

    def build(self, model_config: Any, obs_dims: ObsDims, action_spec: ActionSpec, where: str = "policy.<tag>.model",
              critic_dims: ObsDims | None = None) -> nn.Module:
        """Instantiates ``model_config.type`` for one policy (the contract: :mod:`warp_drive.training.models`);
        ``where`` is the model section's dotted key, for messages; ``critic_dims``: the critic input's feature
        shape when the critic sees another input than the actor (passed as the keyword ``critic_dims``).

        Raises:
            ConfigError: Unknown type, a ``kwargs`` key the model does not take, a separate critic input for a
                model that takes none, or the result is not an ``nn.Module``.
        """
        cls = self.create(model_config.type)
        if model_config.kwargs and (not hasattr(cls, "from_config") or cls.__module__.startswith("warp_drive.")):
            check_model_kwargs(cls, model_config.kwargs, f"{where}.kwargs", model_config.type)
        if critic_dims is not None and model_config.type in _SEPARATE_CRITIC:
            cls = _import(model_config.type, _SEPARATE_CRITIC[model_config.type])
        extra = {} if critic_dims is None else {"critic_dims": critic_dims}
        if extra and not takes_keyword(getattr(cls, "from_config", cls.__init__), "critic_dims"):
            raise ConfigError(f"model type {model_config.type!r} ({cls.__name__}) takes no separate critic input, but "
                              f"`{where.rpartition('.model')[0]}.critic_input` differs from its actor_input: use "
                              "`critic_input: local`, or a model whose from_config (or constructor) takes the keyword "
                              "`critic_dims` and whose forward takes {'actor': ..., 'critic': ...}.")
        if hasattr(cls, "from_config"):
            model = cls.from_config(model_config, obs_dims, action_spec, **extra)
        else:
            model = cls(obs_dims, action_spec, **dict(model_config.kwargs), **extra)
        if not isinstance(model, nn.Module):
            raise ConfigError(
                f"model type {model_config.type!r} built a {type(model).__name__}; models must "
                "be torch.nn.Module subclasses."
            )
        logger.debug("built model %s: %s", model_config.type, type(model).__name__)
        return model

    def _describe(self, name: str) -> str:
        ref = self._registry[name]
        return ref if isinstance(ref, str) else f"{ref.__module__}.{ref.__qualname__}"


def _import(name: str, ref: ModelRef) -> type:
    """The class ``ref`` (a class, or a ``"module:Class"`` path imported now) of model type ``name``.

    Raises:
        ConfigError: the import fails.
    """
    if isinstance(ref, type):
        return ref
    module_name, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"cannot import model {name!r} from {ref!r}: {err}") from err


#: Arguments that the built-in models' ``from_config`` takes from the model section itself -> that key.
SECTION_ARGUMENTS = {"fc_dims": "fc_dims", "init_method": "init_method", "action_scale": "output_w",
                     "action_bias": "output_b", "output_w": "output_w", "output_b": "output_b"}


#: Arguments the policy builder passes itself, never ``model.kwargs``.
BUILDER_ARGUMENTS = ("critic_dims",)


def takes_keyword(fn: Any, name: str) -> bool:
    """Whether ``fn`` takes the keyword argument ``name`` (or any, with ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # no readable signature: the call is the judge
    return any(p.kind is inspect.Parameter.VAR_KEYWORD or (p.name == name and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
               for p in params)


def check_model_kwargs(cls: type, kwargs: dict[str, Any], where: str, type_name: str) -> None:
    """Every key of ``model.kwargs`` (``where``) is a keyword argument of ``cls(obs_dims, action_spec, ...)``
    that the model section does not set itself (a model with ``**kwargs`` takes any).

    Raises:
        ConfigError: naming the key and the arguments the model takes.
    """
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[3:]  # self, obs_dims, action_spec
    except (TypeError, ValueError):  # no readable signature: the constructor is the judge
        return
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    named = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    allowed = [name for name in named if name not in SECTION_ARGUMENTS and name not in BUILDER_ARGUMENTS]
    for key in kwargs:
        if key in SECTION_ARGUMENTS and key in named:
            section = where.rpartition(".kwargs")[0]
            raise ConfigError(f"`{where}.{key}`: the model section sets it; write `{section}.{SECTION_ARGUMENTS[key]}` "
                              f"instead of `{where}.{key}`.")
        if not takes_any and key not in allowed:
            match = closest_match(key, allowed)
            hint = f"did you mean `{where}.{match}`?" if match else "no close match."
            raise ConfigError(f"unknown key `{where}.{excerpt(key, 60)}`: model type {type_name!r} ({cls.__name__}) takes "
                              f"no argument `{excerpt(key, 60)}`; {hint} It takes: {', '.join(allowed) or '(none)'}.")
