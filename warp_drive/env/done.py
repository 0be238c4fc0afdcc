"""Former path: ``warp_drive.env.done`` is the module :mod:`warp_drive.vocab.done` itself (one module object,
made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import done

alias(__name__, done)
