"""Former path: ``warp_drive.managers.log_controller`` is the module :mod:`warp_drive.services.log_controller`
itself (one module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.services import log_controller

alias(__name__, log_controller)
