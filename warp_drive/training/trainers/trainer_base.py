"""2.7.1 compatibility path: ``warp_drive.training.trainers.trainer_base``.

``TrainerBase`` is :class:`warp_drive.training.run.trainer271.Trainer271` (one class runs A2C and PPO
here; there are no abstract hooks to fill in); the helpers come from
:mod:`warp_drive.training.run.reporting` and :mod:`warp_drive.config.load`.
"""

from warp_drive.config.load import recursive_merge_config_dicts
from warp_drive.training.run.reporting import Metrics, PerfStats, SamplerParamsLog, all_equal, verbose_print
from warp_drive.training.run.trainer271 import Trainer271

TrainerBase = Trainer271

__all__ = [
    "Metrics",
    "PerfStats",
    "SamplerParamsLog",
    "TrainerBase",
    "all_equal",
    "recursive_merge_config_dicts",
    "verbose_print",
]
