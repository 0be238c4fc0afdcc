"""Former path: ``warp_drive.utils.rollout_animation`` is the module :mod:`warp_drive.testing.rollout_animation`
itself (one module object, made so by :func:`warp_drive.compat.alias`)."""

from warp_drive.compat import alias
from warp_drive.testing import rollout_animation

alias(__name__, rollout_animation)
