"""2.7.1 compatibility path: ``warp_drive.training.utils.device_child_process.child_process_base``.

``ProcessWrapper`` (a spawned process that hands its target's exception back as ``.exception``)
from :mod:`warp_drive.training.distributed`. 2.7.1's ``DeviceContextProcessWrapper`` and
``event_messenger`` are not provided: PyTorch owns the CUDA context here, and
``perform_distributed_training`` needs no build event.
"""

from warp_drive.training.distributed import ProcessWrapper

__all__ = ["ProcessWrapper"]
