"""2.7.1 compatibility path: ``warp_drive.training.utils.distributed_train.distributed_trainer_pycuda``.

``perform_distributed_training(setup_trainer_and_train, config, results_dir=None)`` from
:mod:`warp_drive.training.distributed`.
"""

from warp_drive.training.distributed import perform_distributed_training

__all__ = ["perform_distributed_training"]
