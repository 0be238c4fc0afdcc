"""2.7.1 compatibility path: its Numba build helpers, from :mod:`warp_drive.compat271.numba_helpers` (the
``env_config`` / ``env_runner`` modules they wrote into the package are made in memory instead)."""

from warp_drive.compat271.numba_helpers import check_env_header, get_default_env_directory, update_env_header, update_env_runner
from warp_drive.cuda import project_root as get_project_root
from warp_drive.vocab.registrar import EnvironmentRegistrar

__all__ = [
    "EnvironmentRegistrar",
    "check_env_header",
    "get_default_env_directory",
    "get_project_root",
    "update_env_header",
    "update_env_runner",
]
