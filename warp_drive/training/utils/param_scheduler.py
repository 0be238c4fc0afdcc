"""Piecewise-linear parameter schedules (learning rates, loss coefficients).

A schedule is either a number (constant) or a list of ``[timestep, value]`` pairs with sorted
timesteps: before the first pair the first value holds, after the last pair the last value holds,
and values are interpolated linearly in between. Timesteps count env steps (the trainer's
``current_timestep``). Values are plain Python floats: evaluating a schedule never touches the
device.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import torch

from warp_drive.errors import ConfigError

ScheduleLike = float | int | Sequence[Sequence[float]]


class ParamScheduler:
    """A constant or a piecewise-linear function of the timestep.

    Args:
        schedule: A number, or ``[[t0, v0], [t1, v1], ...]`` with ``t0 <= t1 <= ...``.
        name: Used in error messages (e.g. ``"policy.runner.lr"``).

    Raises:
        ConfigError: On an empty, unsorted or malformed schedule.
    """

    def __init__(self, schedule: ScheduleLike | ParamScheduler, name: str = "schedule") -> None:
        self._times: list[float]
        self._values: list[float]
        if isinstance(schedule, ParamScheduler):
            self._times, self._values = list(schedule._times), list(schedule._values)
            return
        if isinstance(schedule, bool):
            raise ConfigError(f"`{name}`={schedule!r} must be a number or [[t, v], ...].")
        if isinstance(schedule, (int, float)):
            self._times, self._values = [0.0], [float(schedule)]
            return
        try:
            pairs = [(float(t), float(v)) for t, v in schedule]
        except (TypeError, ValueError) as err:
            raise ConfigError(
                f"`{name}`={schedule!r} must be a number or a list of [timestep, value] pairs."
            ) from err
        if not pairs:
            raise ConfigError(
                f"`{name}` is an empty schedule; give at least one [timestep, value]."
            )
        times = [t for t, _ in pairs]
        if any(b < a for a, b in zip(times, times[1:])):
            raise ConfigError(
                f"`{name}` timesteps {times} are not sorted; order the pairs by timestep."
            )
        self._times, self._values = times, [v for _, v in pairs]

    @property
    def is_constant(self) -> bool:
        """True if the value never changes."""
        return len(set(self._values)) == 1

    def get_param_value(self, timestep: float) -> float:
        """Value at ``timestep`` (>= 0).

        Raises:
            ConfigError: If ``timestep`` < 0.
        """
        if timestep < 0:
            raise ConfigError(f"timestep={timestep} must be >= 0.")
        times, values = self._times, self._values
        if timestep <= times[0]:
            return values[0]
        if timestep >= times[-1]:
            return values[-1]
        i = bisect.bisect_right(times, timestep)  # times[i-1] <= timestep < times[i]
        t0, t1 = times[i - 1], times[i]
        v0, v1 = values[i - 1], values[i]
        return v0 + (v1 - v0) * (timestep - t0) / (t1 - t0)

    __call__ = get_param_value

    def __repr__(self) -> str:
        if len(self._times) == 1:
            return f"ParamScheduler({self._values[0]})"
        return f"ParamScheduler({[[t, v] for t, v in zip(self._times, self._values)]})"


def set_optimizer_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Sets ``lr`` in every parameter group of ``optimizer`` (in place where the group's learning
    rate is a tensor, as a CUDA-graph-captured Adam reads it)."""
    for group in optimizer.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr


class LRScheduler(torch.optim.lr_scheduler.LRScheduler):
    """Torch LR scheduler following a :class:`ParamScheduler` of env timesteps.

    After ``k`` calls to :meth:`step` every parameter group's learning rate is
    ``schedule(init_timestep + k * timesteps_per_iteration)``. Values are set absolutely, so a
    schedule that passes through 0 is fine (a ratio-based ``LambdaLR`` would divide by zero).

    Args:
        schedule: Number, ``[[t, v], ...]`` list or a ParamScheduler.
        optimizer: Torch optimizer.
        init_timestep: Env timestep at construction (e.g. parsed from a checkpoint).
        timesteps_per_iteration: Env steps per :meth:`step` call (usually train_batch_size).
        last_epoch: Passed to torch (-1 for a fresh scheduler).
    """

    def __init__(
        self,
        schedule: ScheduleLike | ParamScheduler,
        optimizer: torch.optim.Optimizer,
        init_timestep: int = 0,
        timesteps_per_iteration: int = 1,
        last_epoch: int = -1,
    ) -> None:
        self.schedule = ParamScheduler(schedule, name="lr")
        self.init_timestep = int(init_timestep)
        self.timesteps_per_iteration = int(timesteps_per_iteration)
        super().__init__(optimizer, last_epoch)

    def timestep(self) -> int:
        """Env timestep the current learning rate corresponds to."""
        return self.init_timestep + max(self.last_epoch, 0) * self.timesteps_per_iteration

    def get_lr(self) -> list[float | torch.Tensor]:  # noqa: D102 - torch API
        value = self.schedule.get_param_value(self.timestep())
        return [value for _ in self.optimizer.param_groups]  # absolute, not a ratio
