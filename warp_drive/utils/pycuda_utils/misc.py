"""2.7.1 compatibility path: its build helpers, from :mod:`warp_drive.compat271.cuda_helpers` (the ones that
wrote generated files into the package raise ConfigError naming the call to use instead)."""

from warp_drive.compat271.cuda_helpers import check_env_header, get_default_env_directory, update_env_header, update_env_runner
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
