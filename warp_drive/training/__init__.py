"""Training: the engine (``engine/``: the rollout, acting, counters), the run around it (``run/``: the
Trainer's loop, checkpoints, evaluation, metrics, the builder), the algorithms (A2C/PPO, DDPG, SAC:
``algorithms/``), the models (``models/``) and Lightning (``lightning/``); :func:`~warp_drive.training.run.build.build_trainer`
builds a run from its config. The parts the algorithms and the engine share stand flat here
(``buffers``, ``policy_state``, ``distributed``, ``interrupt``, ``checkpoint_files``).

Subpackages are imported explicitly (``warp_drive.training.algorithms`` etc.). Importing this package
only makes the former paths of the modules that moved (``warp_drive.training.rollout``, ``.trainer_api271``,
...) importable: :data:`warp_drive.compat.MOVED_ALIASES`.
"""

from warp_drive.compat import install_moved_aliases

install_moved_aliases()
