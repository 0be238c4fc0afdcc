"""Former path: ``warp_drive.env.registrar`` is the module :mod:`warp_drive.vocab.registrar` itself (one module
object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import registrar

alias(__name__, registrar)
