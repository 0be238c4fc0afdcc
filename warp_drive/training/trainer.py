"""2.7.1 compatibility path: ``warp_drive.training.trainer`` (2.7.1's scripts and notebooks:
``from warp_drive.training.trainer import Trainer``).

``Trainer`` here is :class:`warp_drive.training.run.trainer271.Trainer271`, the Trainer with 2.7.1's names
(``trainer.policies``, ``fetch_episode_states``, ``load_model_checkpoint``, ...). The plain Trainer, which
holds its engine and forwards none of its names, is :class:`warp_drive.training.run.trainer.Trainer`;
``run_directory``, ``check_placeholder_layout`` and ``RUN_CONFIG_FILE`` come from that module.
"""

from warp_drive.training.run.trainer import RUN_CONFIG_FILE, check_placeholder_layout, run_directory
from warp_drive.training.run.trainer271 import Trainer271

Trainer = Trainer271

__all__ = ["RUN_CONFIG_FILE", "Trainer", "check_placeholder_layout", "run_directory"]
