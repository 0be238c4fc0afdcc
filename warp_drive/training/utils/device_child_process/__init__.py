"""2.7.1 compatibility path: ``warp_drive.training.utils.device_child_process`` (package)."""
