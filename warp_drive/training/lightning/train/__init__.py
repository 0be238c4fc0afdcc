"""Former path: ``warp_drive.training.lightning.train``, the Lightning CLI.

Its command line and names from :mod:`warp_drive.cli.lightning_train`; ``python -m
warp_drive.training.lightning.train ...`` runs it (``__main__.py``).
"""

from warp_drive.cli.lightning_train import PROG, engine_run_name, main, parse_args, resume_command, run

__all__ = ["PROG", "engine_run_name", "main", "parse_args", "resume_command", "run"]
