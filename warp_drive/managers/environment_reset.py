"""Former path: ``warp_drive.managers.environment_reset`` is the module
:mod:`warp_drive.services.environment_reset` itself (one module object, made so by
:func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.services import environment_reset

alias(__name__, environment_reset)
