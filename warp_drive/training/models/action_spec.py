"""Action and observation specs read from gymnasium spaces (or ``gym`` spaces, by duck typing)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from warp_drive.vocab.constants import Constants
from warp_drive.errors import DataShapeError, DataTypeError

#: Feature shape of one observation (int = flat width) or of each key of a Dict observation.
ObsDims = int | Sequence[int] | Mapping[str, int | Sequence[int]]


def feature_shape(dims: int | Sequence[int], name: str = "obs_dims") -> tuple[int, ...]:
    """Feature shape from an int width or a shape sequence (DataShapeError: empty, or a size < 1)."""
    shape = (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(int(d) for d in dims)
    if not shape or any(d < 1 for d in shape):
        raise DataShapeError(f"observation dims {name}={dims!r} must be positive sizes.")
    return shape


@dataclass(frozen=True)
class ActionSpec:
    """The action heads of a policy: categorical heads OR one diagonal Gaussian head.

    Attributes:
        categorical: Sizes of the categorical heads (Discrete(n) -> (n,), MultiDiscrete -> nvec).
        gaussian_dim: Dimension d of the Gaussian head (Box with d elements), 0 if none.

    The stored action tensor has :attr:`num_columns` columns: one integer per categorical head,
    or d floats for the Gaussian head.
    """

    categorical: tuple[int, ...] = ()
    gaussian_dim: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "categorical", tuple(int(n) for n in self.categorical))
        if bool(self.categorical) == bool(self.gaussian_dim):
            raise DataShapeError(
                f"ActionSpec(categorical={self.categorical}, gaussian_dim={self.gaussian_dim}) "
                "must have categorical heads or a Gaussian dimension, not both or neither."
            )
        if any(n < 1 for n in self.categorical) or self.gaussian_dim < 0:
            raise DataShapeError(
                f"ActionSpec sizes must be >= 1; got categorical={self.categorical}, "
                f"gaussian_dim={self.gaussian_dim}."
            )

    @property
    def is_gaussian(self) -> bool:
        """True for a continuous (Box) action space."""
        return self.gaussian_dim > 0

    @property
    def num_heads(self) -> int:
        """Number of head outputs the model returns (Gaussian: one ``(mean, std)`` head)."""
        return 1 if self.is_gaussian else len(self.categorical)

    @property
    def num_columns(self) -> int:
        """Columns of the stored action tensor."""
        return self.gaussian_dim if self.is_gaussian else len(self.categorical)

    @property
    def num_logits(self) -> int:
        """Sum of categorical head sizes (width of an ``action_mask``)."""
        return sum(self.categorical)


def action_heads_from_space(space: Any) -> ActionSpec:
    """Builds an :class:`ActionSpec` from a gymnasium action space.

    ``Discrete(n)`` -> one head of n; ``MultiDiscrete(nvec)`` (1-D) -> one head per entry;
    ``Box(shape)`` -> a Gaussian head with ``prod(shape)`` dimensions. A ``start`` offset of
    Discrete/MultiDiscrete is the env's business: the policy emits indices ``0..n-1``.

    Raises:
        DataTypeError: For any other space type.
        DataShapeError: For a multi-dimensional MultiDiscrete or an empty Box.
    """
    from gymnasium import spaces

    from warp_drive.utils.spaces import is_space, to_gymnasium

    space = to_gymnasium(space) if is_space(space) else space
    if isinstance(space, spaces.Discrete):
        return ActionSpec(categorical=(int(space.n),))
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        if nvec.ndim != 1:
            raise DataShapeError(
                f"MultiDiscrete nvec has shape {nvec.shape}; only 1-D nvec is supported "
                "(flatten it to one head per entry)."
            )
        return ActionSpec(categorical=tuple(int(n) for n in nvec))
    if isinstance(space, spaces.Box):
        d = int(math.prod(space.shape))
        if d < 1:
            raise DataShapeError(f"Box action space {space} has no elements.")
        return ActionSpec(gaussian_dim=d)
    raise DataTypeError(
        f"action space {space!r} is not supported; use Discrete, MultiDiscrete or Box."
    )


def obs_dims_from_space(space: Any) -> ObsDims:
    """Feature shape(s) of a gymnasium observation space for the model constructor.

    ``Box(shape)`` -> ``shape``; ``Dict`` -> ``{key: shape}`` (an ``action_mask`` key is kept,
    the model treats it as a mask). Discrete observations must be one-hot encoded by the env.

    Raises:
        DataTypeError: For any other space type (or a Dict entry that is not a Box).
    """
    from gymnasium import spaces

    from warp_drive.utils.spaces import is_space, to_gymnasium

    space = to_gymnasium(space) if is_space(space) else space
    if isinstance(space, spaces.Box):
        return tuple(int(s) for s in space.shape)
    if isinstance(space, spaces.Dict):
        out: dict[str, tuple[int, ...]] = {}
        for key, sub in space.spaces.items():
            if isinstance(sub, spaces.MultiBinary) and key == Constants.ACTION_MASK:
                out[key] = (int(np.prod(sub.shape)),)
            elif isinstance(sub, spaces.Box):
                out[key] = tuple(int(s) for s in sub.shape)
            else:
                raise DataTypeError(
                    f"observation key {key!r} has space {sub!r}; Dict entries must be Box "
                    f"(or MultiBinary for {Constants.ACTION_MASK!r})."
                )
        return out
    raise DataTypeError(f"observation space {space!r} is not supported; use Box or Dict of Box.")
