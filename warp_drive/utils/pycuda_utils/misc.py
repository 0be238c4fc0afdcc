"""2.7.1 compatibility path: its build helpers, from :mod:`warp_drive.cuda.legacy` (the ones that
wrote generated files into the package raise ConfigError naming the call to use instead)."""

from warp_drive.cuda.legacy import check_env_header, get_default_env_directory, update_env_header, update_env_runner
from warp_drive.utils.env_registrar import EnvironmentRegistrar
from warp_drive.utils.common import get_project_root

__all__ = [
    "EnvironmentRegistrar",
    "check_env_header",
    "get_default_env_directory",
    "get_project_root",
    "update_env_header",
    "update_env_runner",
]
