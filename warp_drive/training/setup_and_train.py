"""Former path: ``warp_drive.training.setup_and_train``, 2.7.1's ``setup_trainer_and_train`` and script.

Its names from :mod:`warp_drive.cli.setup_and_train` and :mod:`warp_drive.cli.envs` (the example
envs by run-config name).
"""

from warp_drive.cli.envs import REFERENCE_ENV_NAMES, env_class_for, example_env_name
from warp_drive.cli.setup_and_train import main, parse_args, run_config_names, run_config_path, setup_trainer_and_train

__all__ = ["REFERENCE_ENV_NAMES", "env_class_for", "example_env_name", "main", "parse_args", "run_config_names",
           "run_config_path", "setup_trainer_and_train"]
