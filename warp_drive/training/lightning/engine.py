"""Building the engine (a :class:`~warp_drive.training.trainer.Trainer`) per Lightning rank.

With ``strategy="ddp"`` every rank is its own process that must build its env replicas, data
store and models on its own GPU, after Lightning has chosen that GPU. The module therefore takes
an *engine factory*, called in ``setup`` as ``factory(rank=..., world_size=..., device_id=...)``.
:class:`~warp_drive.training.lightning.example_factory.ExampleEnvEngineFactory` builds engines for envs
found by name in a registrar (by default the bundled example envs); any callable with that signature
works for custom envs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from warp_drive.training.trainer import Trainer


class EngineFactory(Protocol):
    """Builds the engine of one rank.

    Args:
        rank: Global rank of the calling process (0 without DDP).
        world_size: Number of ranks.
        device_id: CUDA device index of this rank (None on the CPU).
    """

    def __call__(self, *, rank: int, world_size: int, device_id: int | None) -> Trainer: ...
