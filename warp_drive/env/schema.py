"""Former path: ``warp_drive.env.schema`` is the module :mod:`warp_drive.vocab.schema` itself (one module object,
made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.vocab import schema

alias(__name__, schema)
