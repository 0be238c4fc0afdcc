"""Former path: ``warp_drive.env.start_state`` is the module :mod:`warp_drive.vocab.start_state` itself (one
module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import start_state

alias(__name__, start_state)
