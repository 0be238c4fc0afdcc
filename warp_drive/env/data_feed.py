"""Former path: ``warp_drive.env.data_feed`` is the module :mod:`warp_drive.vocab.data_feed` itself (one module
object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import data_feed

alias(__name__, data_feed)
