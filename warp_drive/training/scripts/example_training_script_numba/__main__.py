"""Entry point of ``python -m warp_drive.training.scripts.example_training_script_numba`` (2.7.1's script)."""

import sys

from warp_drive.cli.setup_and_train import main_numba

sys.exit(main_numba())
