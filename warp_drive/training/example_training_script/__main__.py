"""Entry point of ``python -m warp_drive.training.example_training_script`` (:mod:`warp_drive.cli.train`)."""

import sys

from warp_drive.cli.train import main

sys.exit(main())
