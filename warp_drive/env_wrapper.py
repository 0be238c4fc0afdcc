"""2.7.1 compatibility path: ``warp_drive.env_wrapper`` is the module :mod:`warp_drive.env.env_wrapper` itself
(one module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.env import env_wrapper

alias(__name__, env_wrapper)
