"""Training: algorithms (A2C/PPO), models, schedules; the Trainer lives in ``trainer.py``.

Subpackages are imported explicitly (``warp_drive.training.algorithms`` etc.); importing this
package has no side effects.
"""
