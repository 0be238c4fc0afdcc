"""2.7.1 compatibility path: ``warp_drive.training.utils.distributed_train`` (package)."""
