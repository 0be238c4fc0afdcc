"""Former path: ``warp_drive.env.backends`` is the module :mod:`warp_drive.vocab.backends` itself (one module
object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import backends

alias(__name__, backends)
