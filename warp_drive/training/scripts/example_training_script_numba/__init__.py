"""2.7.1 compatibility path: ``warp_drive.training.scripts.example_training_script_numba``.

``setup_trainer_and_train`` and the script's command line (``python -m
warp_drive.training.scripts.example_training_script_numba --env NAME [--num_gpus N] [--auto_scale]
[--results_dir D]``) from :mod:`warp_drive.cli.setup_and_train`, on the envs' Numba steps (the numba
backend; the cpu backend where numba-cuda or a GPU is missing, with a notice).
"""

from warp_drive.cli.setup_and_train import main_numba as main
from warp_drive.cli.setup_and_train import parse_args
from warp_drive.cli.setup_and_train import setup_trainer_and_train_numba as setup_trainer_and_train

__all__ = ["main", "parse_args", "setup_trainer_and_train"]
