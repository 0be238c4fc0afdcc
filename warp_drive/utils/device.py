"""Former path: ``warp_drive.utils.device`` is the module :mod:`warp_drive.cuda.device` itself (one module
object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.cuda import device

alias(__name__, device)
