"""Former path: ``warp_drive.managers.sampler`` is the module :mod:`warp_drive.services.sampler` itself (one
module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.services import sampler

alias(__name__, sampler)
