"""Former path: ``warp_drive.numba_backend.build`` is the module :mod:`warp_drive.testing.numba_build` itself
(one module object, made so by :func:`warp_drive.compat.alias`). ``python -m`` here runs it."""

from warp_drive.compat import alias
from warp_drive.testing import numba_build

alias(__name__, numba_build)
