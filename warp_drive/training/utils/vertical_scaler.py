"""2.7.1 compatibility path: ``warp_drive.training.utils.vertical_scaler``.

``perform_auto_vertical_scaling(setup_trainer_and_train, config, num_iters=2)`` from
:mod:`warp_drive.training.run.auto_scale` (in-process trials measured for speed and memory).
"""

from warp_drive.training.run.auto_scale import perform_auto_vertical_scaling

__all__ = ["perform_auto_vertical_scaling"]
