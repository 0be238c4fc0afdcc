"""Rollouts as a Lightning data source: an iterable dataset whose items are GPU-resident batches.

Each item is one on-device rollout of the engine (:meth:`Engine.collect <warp_drive.training.engine.Engine.collect>`:
``B = train_batch_size // num_envs`` env steps for every env replica, then every trained policy's training batch), a
dict ``{policy tag: {name: tensor}}`` whose tensors are views of the engine's rollout buffers on its device; nothing is
copied to the host, and the DataLoader passes the dict through untouched (``batch_size=None``, identity collate).

The batch tensors are views of buffers the next rollout overwrites: consume a batch before asking
for the next one. Lightning does so, because the dataset has a length (rollouts per Lightning
epoch), which turns off Lightning's one-batch prefetch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from torch.utils.data import DataLoader, Dataset, IterableDataset

from warp_drive.errors import ConfigError
from warp_drive.training.engine import Engine, PolicyBatches

#: Default lower bound of rollouts per Lightning epoch: epoch-end work (logger writes, callbacks,
#: one device sync) is then spread over enough iterations to stay negligible.
MIN_ITERATIONS_PER_EPOCH = 10


def iterations_per_epoch_for(episode_length: int, steps_per_iter: int,
                             min_iterations: int = MIN_ITERATIONS_PER_EPOCH) -> int:
    """Smallest multiple of ``ceil(episode_length / steps_per_iter)`` that is >= ``min_iterations``: an epoch
    then spans whole episodes (:func:`episode_window`) and at least ``min_iterations`` rollouts."""
    per_episode = max(1, math.ceil(episode_length / max(1, steps_per_iter)))
    return per_episode * max(1, math.ceil(min_iterations / per_episode))


def episode_window(engine: Engine) -> int:
    """Rollouts that span one episode of the engine: ``ceil(episode_length / steps_per_iter)``.

    After any multiple of this many rollouts every env has ended at least one episode (when
    episodes are time-limited), so episode statistics are reported at such iterations only.
    """
    return iterations_per_epoch_for(engine.env_wrapper.episode_length, engine.steps_per_iter, min_iterations=1)


def default_iterations_per_epoch(engine: Engine) -> int:
    """:func:`iterations_per_epoch_for` the engine's episode length and rollout length."""
    return iterations_per_epoch_for(engine.env_wrapper.episode_length, engine.steps_per_iter)


def passthrough_collate(item: Any) -> Any:
    """Collate function of the rollout DataLoader: returns the item unchanged (no copy)."""
    return item


class RolloutDataset(IterableDataset):
    """Iterable dataset of on-device rollouts of one engine.

    Iterating yields ``iterations_per_epoch`` batches (one Lightning epoch); each ``next`` runs
    ``engine.collect()`` (a rollout and its training batches). The env state carries over from
    one epoch to the next, as in ``Trainer.train``. Use it with ``num_workers=0`` only: the env
    lives on this process's device.

    Args:
        engine: The engine holding the env, sampler, models and buffers.
        iterations_per_epoch: Rollouts per epoch (default :func:`default_iterations_per_epoch`).

    Raises:
        ConfigError: ``iterations_per_epoch`` < 1, or no policy is trained.
    """

    def __init__(self, engine: Engine, iterations_per_epoch: int | None = None) -> None:
        super().__init__()
        ipe = default_iterations_per_epoch(engine) if iterations_per_epoch is None else int(iterations_per_epoch)
        if ipe < 1:
            raise ConfigError(f"iterations_per_epoch={iterations_per_epoch} must be >= 1 (rollouts per Lightning epoch)")
        if not any(p.to_train for p in engine.policies.values()):
            raise ConfigError("no policy of the run config has to_train=true: there is nothing to train")
        self.engine = engine
        self.iterations_per_epoch = ipe

    def __len__(self) -> int:
        return self.iterations_per_epoch

    def __iter__(self) -> Iterator[PolicyBatches]:
        for _ in range(self.iterations_per_epoch):
            yield self.engine.collect()  # one rollout and its training batches (on the device; no host sync)


class WarpDriveDataset(Dataset):
    """Map-style dataset whose item ``i`` is ``generate_data(batch_index=i)`` (WarpDrive 2.7.1's name).

    Kept for code written against 2.7.1 that builds its own data function (2.7.1's module produced one env step per
    item and let the DataLoader collate ``batch_size`` of them); :class:`WarpDriveModule` serves whole on-device
    rollouts through :class:`RolloutDataset`.

    Args:
        generate_data: ``generate_data(batch_index=i)`` returns item ``i``.
        batch_size: Number of items (``len(dataset)``).

    Raises:
        ConfigError: ``generate_data`` is not callable or ``batch_size`` < 1.
    """

    def __init__(self, generate_data: Callable[..., Any], batch_size: int) -> None:
        if not callable(generate_data):
            raise ConfigError(f"generate_data must be callable; got {type(generate_data).__name__}")
        if int(batch_size) < 1:
            raise ConfigError(f"batch_size={batch_size} must be >= 1 (items per data loader pass)")
        self.generate_data = generate_data
        self.batch_size = int(batch_size)
        self.data_dict: Any = None  # the last item produced

    def __getitem__(self, batch_index: int = 0) -> Any:
        self.data_dict = self.generate_data(batch_index=batch_index)
        return self.data_dict

    def __len__(self) -> int:
        return self.batch_size


def rollout_dataloader(engine: Engine, iterations_per_epoch: int | None = None) -> DataLoader:
    """A DataLoader over :class:`RolloutDataset` that passes device batches through untouched."""
    dataset = RolloutDataset(engine, iterations_per_epoch)
    return DataLoader(dataset, batch_size=None, collate_fn=passthrough_collate, num_workers=0, pin_memory=False)
