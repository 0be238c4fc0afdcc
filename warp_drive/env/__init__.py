"""The env contract in one place: what an environment is and what it hands to the framework.

- :class:`CUDAEnvironmentContext` (``context.py``): the base class of every env (kernels,
  NumPy step, agent groups, seeding, render hook, truncation flag, array schema).
- :class:`DataFeed` (``data_feed.py``): the named arrays an env gives the data manager.
- :class:`Constants` (``constants.py``): the reserved data names.
- :class:`EnvironmentRegistrar` and :data:`env_registrar` (``registrar.py``): envs by name.
- :class:`ArraySpec` (``schema.py``): an env's declared array shapes, checked at push.
- :func:`split_done` (``done.py``): done flag -> (terminated, truncated).
- ``backends.py``: the backend names; ``placeholders.py``: the step placeholders.

Importing this package imports neither torch nor pycuda.
"""

from warp_drive.env.backends import BACKENDS, canonical_backend
from warp_drive.env.constants import Constants
from warp_drive.env.context import CUDAEnvironmentContext, binds_episode_index, has_vectorised_cpu_step
from warp_drive.env.data_feed import DataFeed
from warp_drive.env.done import split_done
from warp_drive.env.registrar import EnvironmentRegistrar, env_registrar
from warp_drive.env.schema import ArraySpec, check_array_schema

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
