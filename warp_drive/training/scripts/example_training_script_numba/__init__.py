"""2.7.1 compatibility path: ``warp_drive.training.scripts.example_training_script_numba``.

``setup_trainer_and_train`` and the script's command line (``python -m
warp_drive.training.scripts.example_training_script_numba --env NAME [--num_gpus N] [--auto_scale]
[--results_dir D]``) from :mod:`warp_drive.cli.setup_and_train` (there is no Numba backend:
the envs run their CUDA kernels, or NumPy steps on the cpu backend).
"""

from warp_drive.cli.setup_and_train import main, parse_args, setup_trainer_and_train

__all__ = ["main", "parse_args", "setup_trainer_and_train"]
