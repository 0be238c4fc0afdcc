"""The command-line programs, on the top floor: nothing in warp_drive imports this package (the old
module paths of its programs are thin re-exports, listed in :mod:`warp_drive.compat`).

- :mod:`warp_drive.cli.train`: the example training script (``python -m
  warp_drive.training.example_training_script``, ``warp-drive-train``);
- :mod:`warp_drive.cli.lightning_train`: the Lightning CLI (``python -m warp_drive.training.lightning.train``);
- :mod:`warp_drive.cli.setup_and_train`: 2.7.1's script and ``setup_trainer_and_train`` (``python -m
  warp_drive.training.scripts.example_training_script_pycuda``, and its Numba twin);
- :mod:`warp_drive.cli.common`: what they share (flags, logging, expected errors as short messages);
- :mod:`warp_drive.cli.envs`: the envs the command lines name: the example envs (the one module here that
  imports ``example_envs``) and your own (import path, ``--import``, the ``warp_drive.envs`` entry point).
"""
