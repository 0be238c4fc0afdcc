"""Training utilities: parameter schedules and minibatching."""

from warp_drive.training.utils.minibatch import (
    flatten_leading,
    index_tree,
    iterate_minibatches,
    minibatch_indices,
)
from warp_drive.training.utils.param_scheduler import LRScheduler, ParamScheduler, set_optimizer_lr

__all__ = [
    "LRScheduler",
    "ParamScheduler",
    "flatten_leading",
    "index_tree",
    "iterate_minibatches",
    "minibatch_indices",
    "set_optimizer_lr",
]
