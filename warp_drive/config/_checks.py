"""Former path: ``warp_drive.config._checks`` is the module :mod:`warp_drive.utils.checks` itself (one module
object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.utils import checks

alias(__name__, checks)
