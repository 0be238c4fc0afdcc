"""Former path: ``warp_drive.managers.numba_services`` is the module :mod:`warp_drive.services.numba_services`
itself (one module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.services import numba_services

alias(__name__, numba_services)
