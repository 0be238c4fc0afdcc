"""2.7.1 compatibility path: ``warp_drive.training.utils.device_child_process.process_group_torch`` (from
:mod:`warp_drive.training.distributed`)."""

from warp_drive.training.distributed import clear_torch_process_group, setup_torch_process_group

__all__ = ["clear_torch_process_group", "setup_torch_process_group"]
