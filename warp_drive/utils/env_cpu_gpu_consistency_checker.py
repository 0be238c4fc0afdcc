"""Former path: ``warp_drive.utils.env_cpu_gpu_consistency_checker`` is the module
:mod:`warp_drive.testing.consistency` itself (one module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.testing import consistency

alias(__name__, consistency)
