"""The env contract in one place: what an environment is and what it hands to the framework.

Here:

- :class:`CUDAEnvironmentContext` (``context.py``): the base class of every env (kernels,
  NumPy step, agent groups, seeding, render hook, truncation flag, array schema).
- ``placeholders.py``: the step placeholders; ``env_wrapper.py``: :class:`~warp_drive.env.env_wrapper.EnvWrapper`,
  which resets an env once on the host, pushes its data, then steps and resets it on the device (2.7.1's path
  ``warp_drive.env_wrapper`` is the same module).

Re-exported from the vocabulary below the managers (:mod:`warp_drive.vocab`), so that env authors import
everything from here:

- :class:`DataFeed` (``data_feed.py``): the named arrays an env gives the data manager.
- :class:`Constants` (``constants.py``): the reserved data names.
- :class:`EnvironmentRegistrar` and :data:`env_registrar` (``registrar.py``): envs by name.
- :class:`ArraySpec` (``schema.py``): an env's declared array shapes, checked at push.
- :func:`split_done` (``done.py``): done flag -> (terminated, truncated).
- ``backends.py``: the backend names.

Importing this package imports neither torch nor pycuda (nor the wrapper)."""

from warp_drive.vocab.backends import BACKENDS, canonical_backend
from warp_drive.vocab.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext, binds_episode_index, has_vectorised_cpu_step
from warp_drive.vocab.data_feed import DataFeed
from warp_drive.vocab.done import split_done
from warp_drive.vocab.registrar import EnvironmentRegistrar, env_registrar
from warp_drive.vocab.schema import ArraySpec, check_array_schema

# the vocabulary's modules, at the attributes their former paths here had (warp_drive.env.constants, ...)
from warp_drive.vocab import backends, constants, data_feed, done, registrar, schema  # noqa: E402,F401  isort: skip

__all__ = [
    "BACKENDS",
    "ArraySpec",
    "CUDAEnvironmentContext",
    "Constants",
    "DataFeed",
    "EnvironmentRegistrar",
    "binds_episode_index",
    "canonical_backend",
    "check_array_schema",
    "env_registrar",
    "has_vectorised_cpu_step",
    "split_done",
]
