"""Entry point of ``python -m warp_drive.training.example_training_script`` (:mod:`warp_drive.cli.train`).

The SIGTERM / SIGINT handlers come first (a stop while the modules load: exit 143 / 130 with a
message), then the command line's imports."""

import sys

from warp_drive.training.interrupt import StoppedOutsideTraining, stop_outside_training

try:
    with stop_outside_training():
        from warp_drive.cli.train import main

        code = main()
except StoppedOutsideTraining as stop:  # while the modules loaded
    print(stop, file=sys.stderr)
    code = stop.exit_code
sys.exit(code)
