"""Entry point of ``python -m warp_drive.training.lightning.train`` (:mod:`warp_drive.cli.lightning_train`)."""

import sys

from warp_drive.cli.lightning_train import main

sys.exit(main())
