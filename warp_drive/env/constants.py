"""Former path: ``warp_drive.env.constants`` is the module :mod:`warp_drive.vocab.constants` itself (one module
object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import constants

alias(__name__, constants)
