"""Building the engine (an :class:`~warp_drive.training.engine.Engine`, or the plain
:class:`~warp_drive.training.run.trainer.Trainer` that holds one and its run folder) per Lightning rank.

With ``strategy="ddp"`` every rank is its own process that must build its env replicas, data
store and models on its own GPU, after Lightning has chosen that GPU. The module therefore takes
an *engine factory*, called in ``setup`` as ``factory(rank=..., world_size=..., device_id=...)``:
any callable with that signature, e.g. :class:`~warp_drive.training.lightning.example_factory.ExampleEnvEngineFactory`.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import torch

from warp_drive.errors import ConfigError
from warp_drive.training.engine import Engine
from warp_drive.training.run.trainer import Trainer

logger = logging.getLogger(__name__)


class EngineFactory(Protocol):
    """Builds the engine of one rank.

    Args:
        rank: Global rank of the calling process (0 without DDP).
        world_size: Number of ranks.
        device_id: CUDA device index of this rank (None on the CPU).
    """

    def __call__(self, *, rank: int, world_size: int, device_id: int | None) -> Engine | Trainer: ...


def engine_source(env_wrapper: Any, config: Any, policy_tag_to_agent_id_map: Any, engine: Engine | None,
                  engine_factory: EngineFactory | None) -> tuple[Any, Engine | None, bool]:
    """``(env_wrapper, engine, legacy)`` from the module's arguments; ``legacy``: WarpDrive 2.7.1's form.

    Raises:
        ConfigError: No way or more than one way to get the engine, or 2.7.1's form without both
            ``env_wrapper`` and ``config``.
    """
    if isinstance(env_wrapper, (Engine, Trainer)):  # WarpDriveModule(engine): our positional form
        if engine is not None:
            raise ConfigError("an engine was passed both positionally and as engine=; pass it once")
        engine, env_wrapper = env_wrapper, None
    legacy = env_wrapper is not None or config is not None or policy_tag_to_agent_id_map is not None
    if sum((legacy, engine is not None, engine_factory is not None)) != 1:
        raise ConfigError(
            "pass exactly one of: env_wrapper=, config=, policy_tag_to_agent_id_map= (WarpDrive 2.7.1's form), "
            "engine= (a built Engine or Trainer) or engine_factory= (built per rank)")
    if legacy and (env_wrapper is None or config is None):
        raise ConfigError("WarpDrive 2.7.1's form needs both env_wrapper= (an EnvWrapper) and config= (the run "
                          "config); got " + ("no env_wrapper" if env_wrapper is None else "no config"))
    return env_wrapper, engine, legacy


def check_placement(engine: Engine, root: torch.device, rank: int) -> None:
    """Raises ConfigError unless the engine's env and models live on ``root``, the device of ``rank``."""
    dev = torch.device(engine.device)
    if dev.type != root.type or (dev.type == "cuda" and (dev.index or 0) != (root.index or 0)):
        raise ConfigError(
            f"the engine's env and models live on {dev} but Lightning runs rank {rank} on {root}: use "
            "accelerator='gpu' with the pycuda backend and accelerator='cpu' with the cpu backend; with several "
            "devices pass engine_factory= so that every rank builds its env on its own device")


def check_unused_parameters(strategy: Any, num_optimizers: int, world_size: int) -> None:
    """Under DDP with several optimizers (trained policies, or a policy with several networks), each
    backward leaves the parameters of the others unused: sets the strategy's
    ``find_unused_parameters`` when it leaves it unset (``setup`` runs before the model is wrapped).

    Raises:
        ConfigError: the strategy sets ``find_unused_parameters=False``.
    """
    if world_size > 1 and num_optimizers > 1:
        ddp_kwargs = getattr(strategy, "_ddp_kwargs", None)
        if not isinstance(ddp_kwargs, dict):
            return
        if "find_unused_parameters" not in ddp_kwargs:
            logger.info("%d optimizers under DDP: setting find_unused_parameters=True", num_optimizers)
            ddp_kwargs["find_unused_parameters"] = True
        elif not ddp_kwargs["find_unused_parameters"]:
            raise ConfigError(
                f"{num_optimizers} optimizers under DDP (trained policies and their networks): each backward "
                "leaves the other optimizers' parameters unused; use build_lightning_trainer(strategy='ddp') or "
                "DDPStrategy(find_unused_parameters=True)")
